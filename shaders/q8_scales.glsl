// q8_scales.glsl — where the f16 scale of Q8_0 block b of a weight row sits in a part's
// scales binding (written by engine/gpu/gpu_weight.c, which must agree). The scales of a row
// are grouped by block mod 8, as lanes of linear.comp's 8-lane groups take them: lane p,
// which takes blocks p, p+8, p+16, ..., finds its scales adjacent, eight per 16-byte
// texel, so one fetch serves eight of its blocks instead of one (wider groups: lane p
// takes every NPART/8-th scale of list p mod 8, a fetch serving 8*8/NPART blocks). One
// layout for every lane count: the weights do not depend on the kernels' choice. A row has nb = cols/32 blocks; each lane gets
// J = ceil(nb/8) halves rounded up to 8, a row 8*J halves (zeros where no block is).

// J: halves per lane and row (a multiple of 8).
uint q8_lane_halves(uint cols)
{
    return ((cols / 32u + 7u) / 8u + 7u) & ~7u;
}

// Half index of the scale of block b of row `row`.
uint q8_scale_half(uint row, uint b, uint cols)
{
    uint j = q8_lane_halves(cols);
    return row * 8u * j + (b & 7u) * j + (b >> 3);
}
