// q8_scales.glsl — where the f16 scale of Q8_0 block b of a weight row sits in a part's
// scales binding (written by engine/gpu/gpu_weight.c, which must agree). The scales of a row
// are grouped by lane of linear.comp's 8-lane groups: lane p, which takes blocks p, p+8,
// p+16, ..., finds its scales adjacent, eight per 16-byte texel, so one fetch serves
// eight of its blocks instead of one. A row has nb = cols/32 blocks; each lane gets
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
