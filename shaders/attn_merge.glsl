// attn_merge.glsl — merging two online-softmax states of one (token, head) pair: (ma, la,
// acc a) over some positions and (mb, lb, acc b) over the positions after them. Attention
// cuts every pair's positions into chunks of a fixed size (a power of two, from position
// 0) and merges the chunks' states in order: attention.comp at each chunk's end when one
// workgroup walks them all, attention_merge.comp when the chunks were split over
// workgroups (split-K). One formula for both, so both give the same bits. One of
// exp(ma - m) and exp(mb - m) is exp(0) = 1: only the other is computed.
void merge_scales(float ma, float mb, out float m, out float ca, out float cb)
{
    precise float dm = mb - ma;
    precise float x = exp(-abs(dm));
    bool up = dm > 0.0;
    m = up ? mb : ma;
    ca = up ? x : 1.0;
    cb = up ? 1.0 : x;
}

float merge_sum(float a, float ca, float b, float cb)
{
    precise float r = a * ca + b * cb;
    return r;
}

vec4 merge_acc(vec4 a, float ca, vec4 b, float cb)
{
    precise vec4 r = a * ca + b * cb;
    return r;
}
