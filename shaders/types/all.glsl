// all.glsl — every block type's decoder (one include per type), for the kernels that read
// weights: linear.comp includes it with one BLK_<type> defined, which makes that type's
// names BLK_DQ (its decoder), BLK_V (values per block) and BLK_B (bytes per block);
// embed.comp calls the decoders by ggml type id.
#include "q4_0.glsl"
#include "q4_1.glsl"
#include "q5_0.glsl"
#include "q5_1.glsl"
#include "q2_k.glsl"
#include "q3_k.glsl"
#include "q4_k.glsl"
#include "q5_k.glsl"
#include "q6_k.glsl"
#include "iq4_nl.glsl"
#include "iq4_xs.glsl"
#include "mxfp4.glsl"
#include "bf16.glsl"
