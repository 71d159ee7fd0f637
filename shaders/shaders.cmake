# Every shader variant compiled into the library: ember_shader(NAME SOURCE [DEFINES ...]).
# NAME becomes ember_spv_NAME in the generated ember_shaders.h.
