# Every shader variant compiled into the library: ember_shader(NAME SOURCE [DEFINES ...]).
# NAME becomes ember_spv_NAME in the generated ember_shaders.h. Variants ending in _sg
# use subgroup arithmetic; the others need only Vulkan 1.2 core. See docs/kernels.md.
foreach(dt f32 f16 q8)
  string(TOUPPER ${dt} DT)
  ember_shader(matvec_${dt} matvec.comp DEFINES DT_${DT})
  ember_shader(matvec_${dt}_sg matvec.comp DEFINES DT_${DT} SUBGROUP)
  ember_shader(matmul_${dt} matmul.comp DEFINES DT_${DT})
endforeach()
ember_shader(matmul_f32_generic matmul.comp DEFINES DT_F32 GENERIC)
ember_shader(matmul_f16_generic matmul.comp DEFINES DT_F16 GENERIC)
ember_shader(embed embed.comp)
ember_shader(rmsnorm rmsnorm.comp)
ember_shader(rmsnorm_sg rmsnorm.comp DEFINES SUBGROUP)
ember_shader(rope_store rope_store.comp)
ember_shader(attention attention.comp)
ember_shader(attention_sg attention.comp DEFINES SUBGROUP)
ember_shader(argmax argmax.comp)
ember_shader(argmax_sg argmax.comp DEFINES SUBGROUP)
