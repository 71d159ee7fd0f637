#version 450
// bindings_probe.comp — a self-test of the platform layer (tests/test_platform.c), not a
// kernel: reads one binding of each kind ember_vk_pipeline_create_ex offers and writes
// what it read. out[i] = texel RGBA32F i (4 floats), then R16F texel i, then uniform
// word i, for i < n.
layout(local_size_x = 1) in;
layout(push_constant) uniform Push { uint n; } pc;
layout(std430, binding = 0) writeonly buffer O { float o[]; };
layout(binding = 1) uniform samplerBuffer rgba;
layout(binding = 2) uniform samplerBuffer r16;
layout(std140, binding = 3) uniform U { uvec4 words[4]; } u;

void main()
{
    for (uint i = 0; i < pc.n; i++) {
        vec4 v = texelFetch(rgba, int(i));
        o[6u * i + 0u] = v.x;
        o[6u * i + 1u] = v.y;
        o[6u * i + 2u] = v.z;
        o[6u * i + 3u] = v.w;
        o[6u * i + 4u] = texelFetch(r16, int(i)).r;
        o[6u * i + 5u] = float(u.words[i / 4u][i % 4u]);
    }
}
