/* probe.c — how fast a Vulkan device runs a mat-vec's arithmetic three ways
 * (bench/int-dot-probe.sh), on random rows, interleaved ROUNDS times; prints each
 * round's GPU time (timestamps) and the medians, and checks each against a double-
 * precision loop over what it reads. One invocation per row: dot_f32.comp (Q8_0-like
 * int8 weights to floats, f32 x: linear.comp's arithmetic), dot_i8.comp (the same
 * weights, x quantized to int8 per block beforehand, packed integer dot products),
 * dot_q4_i8.comp (4-bit weights, int8 x). linear.comp's decode layout (tile.glsl: 8
 * lanes, 16 rows, an x block loaded once per lane for 16 rows): tile_f32.comp as
 * linear.comp is, tile_i8.comp quantizing each x block in the kernel; tile_q4_f32.comp
 * and tile_q4_i8.comp the same for 4-bit weights; tile_q4k_f32.comp a 4-bit unit as
 * Q4_K's decoder gives it (a super-block header loaded and unpacked per row and unit).
 *   probe DOT_F32 DOT_I8 DOT_Q4_I8 TILE_F32 TILE_I8 TILE_Q4_F32 TILE_Q4_I8 TILE_Q4K_F32
 *         (.spv) [ROWS COLS ROUNDS] */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <vulkan/vulkan.h>

#define CHECK(call) do { VkResult r_ = (call); if (r_ != VK_SUCCESS) { \
    fprintf(stderr, "probe: %s failed (%d)\n", #call, (int)r_); exit(1); } } while (0)

typedef struct gpu {
    VkPhysicalDevice pd;
    VkDevice dev;
    VkQueue q;
    uint32_t qf;
    float period;
} gpu;

typedef struct buf {
    VkBuffer b;
    VkDeviceMemory m;
    void *host;
    VkDeviceSize size;
} buf;

static void open_gpu(gpu *g)
{
    VkApplicationInfo app = {.sType = VK_STRUCTURE_TYPE_APPLICATION_INFO, .apiVersion = VK_API_VERSION_1_3};
    VkInstanceCreateInfo ici = {.sType = VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO, .pApplicationInfo = &app};
    VkInstance inst;
    CHECK(vkCreateInstance(&ici, NULL, &inst));
    uint32_t n = 1;
    VkResult r = vkEnumeratePhysicalDevices(inst, &n, &g->pd);
    if ((r != VK_SUCCESS && r != VK_INCOMPLETE) || n == 0) fprintf(stderr, "probe: no device\n"), exit(1);
    VkPhysicalDeviceProperties p;
    vkGetPhysicalDeviceProperties(g->pd, &p);
    g->period = p.limits.timestampPeriod;
    VkPhysicalDeviceVulkan13Features f13 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_3_FEATURES};
    VkPhysicalDeviceFeatures2 f2 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2, .pNext = &f13};
    vkGetPhysicalDeviceFeatures2(g->pd, &f2);
    if (!f13.shaderIntegerDotProduct) fprintf(stderr, "probe: no shaderIntegerDotProduct\n"), exit(1);
    VkPhysicalDeviceShaderIntegerDotProductProperties dp = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_INTEGER_DOT_PRODUCT_PROPERTIES};
    VkPhysicalDeviceProperties2 p2 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2, .pNext = &dp};
    vkGetPhysicalDeviceProperties2(g->pd, &p2);
    printf("device: %s; 4x8 packed signed dot product accelerated: %s\n", p.deviceName,
           dp.integerDotProduct4x8BitPackedSignedAccelerated ? "yes" : "no");
    g->qf = 0;
    float prio = 1;
    VkPhysicalDeviceVulkan13Features want = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_3_FEATURES,
                                             .shaderIntegerDotProduct = VK_TRUE};
    VkDeviceQueueCreateInfo qci = {.sType = VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO, .queueFamilyIndex = g->qf,
                                   .queueCount = 1, .pQueuePriorities = &prio};
    VkDeviceCreateInfo dci = {.sType = VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO, .pNext = &want,
                              .queueCreateInfoCount = 1, .pQueueCreateInfos = &qci};
    CHECK(vkCreateDevice(g->pd, &dci, NULL, &g->dev));
    vkGetDeviceQueue(g->dev, g->qf, 0, &g->q);
}

/* A host-visible, coherent storage buffer (the probe times arithmetic, not transfers). */
static buf make_buf(gpu *g, VkDeviceSize size)
{
    buf b = {.size = size};
    VkBufferCreateInfo bi = {.sType = VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO, .size = size,
                             .usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT};
    CHECK(vkCreateBuffer(g->dev, &bi, NULL, &b.b));
    VkMemoryRequirements req;
    vkGetBufferMemoryRequirements(g->dev, b.b, &req);
    VkPhysicalDeviceMemoryProperties mp;
    vkGetPhysicalDeviceMemoryProperties(g->pd, &mp);
    VkMemoryPropertyFlags want = VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT;
    uint32_t t = 0;
    while (t < mp.memoryTypeCount && !((req.memoryTypeBits >> t & 1) && (mp.memoryTypes[t].propertyFlags & want) == want))
        t++;
    VkMemoryAllocateInfo ai = {.sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO, .allocationSize = req.size,
                               .memoryTypeIndex = t};
    CHECK(vkAllocateMemory(g->dev, &ai, NULL, &b.m));
    CHECK(vkBindBufferMemory(g->dev, b.b, b.m, 0));
    CHECK(vkMapMemory(g->dev, b.m, 0, size, 0, &b.host));
    return b;
}

typedef struct pipe {
    VkPipeline p;
    VkPipelineLayout layout;
    VkDescriptorSet set;
    uint32_t rows_per_wg;
} pipe;

static pipe make_pipe(gpu *g, const char *spv_path, const buf *b, uint32_t n, uint32_t rows_per_wg)
{
    FILE *f = fopen(spv_path, "rb");
    if (!f) fprintf(stderr, "probe: cannot read %s\n", spv_path), exit(1);
    static uint32_t code[1 << 16];
    size_t bytes = fread(code, 1, sizeof code, f);
    fclose(f);
    VkShaderModuleCreateInfo smi = {.sType = VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO, .codeSize = bytes,
                                    .pCode = code};
    VkShaderModule sm;
    CHECK(vkCreateShaderModule(g->dev, &smi, NULL, &sm));
    VkDescriptorSetLayoutBinding lb[6];
    for (uint32_t i = 0; i < n; i++)
        lb[i] = (VkDescriptorSetLayoutBinding){i, VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, 1, VK_SHADER_STAGE_COMPUTE_BIT, NULL};
    VkDescriptorSetLayoutCreateInfo li = {.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO,
                                          .bindingCount = n, .pBindings = lb};
    VkDescriptorSetLayout dsl;
    CHECK(vkCreateDescriptorSetLayout(g->dev, &li, NULL, &dsl));
    VkPushConstantRange pr = {VK_SHADER_STAGE_COMPUTE_BIT, 0, 8};
    VkPipelineLayoutCreateInfo pli = {.sType = VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO, .setLayoutCount = 1,
                                      .pSetLayouts = &dsl, .pushConstantRangeCount = 1, .pPushConstantRanges = &pr};
    pipe p = {.rows_per_wg = rows_per_wg};
    CHECK(vkCreatePipelineLayout(g->dev, &pli, NULL, &p.layout));
    VkComputePipelineCreateInfo ci = {.sType = VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO,
                                      .stage = {.sType = VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO,
                                                .stage = VK_SHADER_STAGE_COMPUTE_BIT, .module = sm, .pName = "main"},
                                      .layout = p.layout};
    CHECK(vkCreateComputePipelines(g->dev, VK_NULL_HANDLE, 1, &ci, NULL, &p.p));
    VkDescriptorPoolSize ps = {VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, 8};
    VkDescriptorPoolCreateInfo dpi = {.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO, .maxSets = 1,
                                      .poolSizeCount = 1, .pPoolSizes = &ps};
    VkDescriptorPool dp;
    CHECK(vkCreateDescriptorPool(g->dev, &dpi, NULL, &dp));
    VkDescriptorSetAllocateInfo dai = {.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO, .descriptorPool = dp,
                                       .descriptorSetCount = 1, .pSetLayouts = &dsl};
    CHECK(vkAllocateDescriptorSets(g->dev, &dai, &p.set));
    VkDescriptorBufferInfo bi[6];
    VkWriteDescriptorSet w[6];
    for (uint32_t i = 0; i < n; i++) {
        bi[i] = (VkDescriptorBufferInfo){b[i].b, 0, VK_WHOLE_SIZE};
        w[i] = (VkWriteDescriptorSet){.sType = VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET, .dstSet = p.set, .dstBinding = i,
                                      .descriptorCount = 1, .descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
                                      .pBufferInfo = &bi[i]};
    }
    vkUpdateDescriptorSets(g->dev, n, w, 0, NULL);
    return p;
}

/* GPU milliseconds of one dispatch of p over rows x cols. */
static double run(gpu *g, const pipe *p, uint32_t rows, uint32_t cols)
{
    static VkCommandPool pool;
    static VkCommandBuffer cb;
    static VkQueryPool qp;
    if (!pool) {
        VkCommandPoolCreateInfo cpi = {.sType = VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO,
                                       .flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT, .queueFamilyIndex = g->qf};
        CHECK(vkCreateCommandPool(g->dev, &cpi, NULL, &pool));
        VkCommandBufferAllocateInfo cai = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO, .commandPool = pool,
                                           .level = VK_COMMAND_BUFFER_LEVEL_PRIMARY, .commandBufferCount = 1};
        CHECK(vkAllocateCommandBuffers(g->dev, &cai, &cb));
        VkQueryPoolCreateInfo qpi = {.sType = VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO,
                                     .queryType = VK_QUERY_TYPE_TIMESTAMP, .queryCount = 2};
        CHECK(vkCreateQueryPool(g->dev, &qpi, NULL, &qp));
    }
    VkCommandBufferBeginInfo bi = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
    CHECK(vkBeginCommandBuffer(cb, &bi));
    vkCmdResetQueryPool(cb, qp, 0, 2);
    vkCmdBindPipeline(cb, VK_PIPELINE_BIND_POINT_COMPUTE, p->p);
    vkCmdBindDescriptorSets(cb, VK_PIPELINE_BIND_POINT_COMPUTE, p->layout, 0, 1, &p->set, 0, NULL);
    uint32_t pc[2] = {rows, cols};
    vkCmdPushConstants(cb, p->layout, VK_SHADER_STAGE_COMPUTE_BIT, 0, 8, pc);
    vkCmdWriteTimestamp(cb, VK_PIPELINE_STAGE_TOP_OF_PIPE_BIT, qp, 0);
    vkCmdDispatch(cb, (rows + p->rows_per_wg - 1) / p->rows_per_wg, 1, 1);
    vkCmdWriteTimestamp(cb, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, qp, 1);
    CHECK(vkEndCommandBuffer(cb));
    VkSubmitInfo si = {.sType = VK_STRUCTURE_TYPE_SUBMIT_INFO, .commandBufferCount = 1, .pCommandBuffers = &cb};
    CHECK(vkQueueSubmit(g->q, 1, &si, VK_NULL_HANDLE));
    CHECK(vkQueueWaitIdle(g->q));
    uint64_t ts[2];
    CHECK(vkGetQueryPoolResults(g->dev, qp, 0, 2, sizeof ts, ts, 8, VK_QUERY_RESULT_64_BIT | VK_QUERY_RESULT_WAIT_BIT));
    return (double)(ts[1] - ts[0]) * g->period / 1e6;
}

static float half_to_float(uint16_t h)
{
    uint32_t e = h >> 10 & 31, m = h & 1023;
    float v = e ? ldexpf((float)(m | 1024), (int)e - 25) : ldexpf((float)m, -24);
    return h >> 15 ? -v : v;
}

static int cmp(const void *a, const void *b) { double x = *(const double *)a, y = *(const double *)b; return (x > y) - (x < y); }

int main(int argc, char **argv)
{
    if (argc < 9) fprintf(stderr, "usage: probe DOT_F32 DOT_I8 DOT_Q4_I8 TILE_F32 TILE_I8 TILE_Q4_F32 TILE_Q4_I8 "
                          "TILE_Q4K_F32 [ROWS COLS ROUNDS]\n"), exit(2);
    uint32_t rows = argc > 9 ? (uint32_t)atoi(argv[9]) : 4096, cols = argc > 10 ? (uint32_t)atoi(argv[10]) : 4096;
    int rounds = argc > 11 ? atoi(argv[11]) : 7;
    if (rounds < 1 || rounds > 100 || cols % 256 || !rows) fprintf(stderr, "probe: bad sizes\n"), exit(2);
    gpu g;
    open_gpu(&g);
    uint32_t nb = cols / 32;
    buf w = make_buf(&g, (VkDeviceSize)rows * cols), w4 = make_buf(&g, (VkDeviceSize)rows * cols / 2);
    buf ws = make_buf(&g, 4ull * rows * nb), x = make_buf(&g, 4ull * cols), xq = make_buf(&g, cols);
    buf xs = make_buf(&g, 4ull * nb), xsum = make_buf(&g, 4ull * nb), hd = make_buf(&g, 16ull * rows * (nb / 8));
    enum { K = 8 };
    buf y[K];
    for (int k = 0; k < K; k++) y[k] = make_buf(&g, 4ull * rows);
    srand(1);
    int8_t *wq = w.host, *xqh = xq.host;
    uint8_t *w4h = w4.host, *codes = malloc((size_t)rows * cols);
    float *wsh = ws.host, *xh = x.host, *xsh = xs.host;
    int32_t *xsumh = xsum.host;
    for (size_t i = 0; i < (size_t)rows * cols; i++) wq[i] = (int8_t)(rand() % 255 - 127), codes[i] = (uint8_t)(rand() % 16);
    for (size_t b = 0; b < (size_t)rows * nb; b++) /* byte i of a block: code i | code i + 16 << 4 */
        for (uint32_t i = 0; i < 16; i++) w4h[b * 16 + i] = (uint8_t)(codes[b * 32 + i] | codes[b * 32 + 16 + i] << 4);
    for (size_t i = 0; i < (size_t)rows * nb; i++) wsh[i] = 0.01f * (1 + rand() % 100) / 100;
    uint8_t *hdh = hd.host; /* Q4_K headers: d and dmin (halves near 0.01 and 0.005), 12 scale bytes */
    for (size_t i = 0; i < (size_t)rows * (nb / 8); i++) {
        uint16_t d = (uint16_t)(0x2000 | rand() % 1024), dmin = (uint16_t)(0x1c00 | rand() % 1024);
        memcpy(hdh + 16 * i, &d, 2), memcpy(hdh + 16 * i + 2, &dmin, 2);
        for (int j = 4; j < 16; j++) hdh[16 * i + j] = (uint8_t)(rand() % 256);
    }
    for (uint32_t b = 0; b < nb; b++) { /* x, then x quantized per block as tile_i8 does */
        float amax = 0;
        for (uint32_t i = 0; i < 32; i++) xh[b * 32 + i] = (float)(rand() % 2001 - 1000) / 1000, amax = fmaxf(amax, fabsf(xh[b * 32 + i]));
        float inv = amax > 0 ? 127.0f / amax : 0;
        xsh[b] = amax / 127;
        xsumh[b] = 0;
        for (uint32_t i = 0; i < 32; i++) xqh[b * 32 + i] = (int8_t)rintf(xh[b * 32 + i] * inv), xsumh[b] += xqh[b * 32 + i];
    }
    buf bf[4] = {w, ws, x, y[0]}, bi[5] = {w, ws, xq, y[1], xs}, b4[6] = {w4, ws, xq, y[2], xs, xsum};
    buf tf[4] = {w, ws, x, y[3]}, ti[4] = {w, ws, x, y[4]}, t4f[5] = {w, ws, x, y[5], w4}, t4i[5] = {w, ws, x, y[6], w4};
    buf t4k[6] = {w, ws, x, y[7], w4, hd};
    pipe p[K] = {make_pipe(&g, argv[1], bf, 4, 64),  make_pipe(&g, argv[2], bi, 5, 64), make_pipe(&g, argv[3], b4, 6, 64),
                 make_pipe(&g, argv[4], tf, 4, 16),  make_pipe(&g, argv[5], ti, 4, 16), make_pipe(&g, argv[6], t4f, 5, 16),
                 make_pipe(&g, argv[7], t4i, 5, 16), make_pipe(&g, argv[8], t4k, 6, 16)};
    static const char *name[K] = {"row: q8 w, f32 x",   "row: q8 w, int8 x",   "row: q4 w, int8 x",
                                  "tile: q8 w, f32 x",  "tile: q8 w, int8 x*", "tile: q4 w, f32 x",
                                  "tile: q4 w, int8 x*", "tile: q4_k unit, f32 x"};
    double t[K][100];
    for (int k = 0; k < K; k++) run(&g, &p[k], rows, cols); /* warm-up: lavapipe compiles at first use */
    for (int r = 0; r < rounds; r++) {
        printf("round %d:", r);
        for (int k = 0; k < K; k++) printf(" %.2f", t[k][r] = run(&g, &p[k], rows, cols));
        printf(" ms\n");
    }
    /* Each against the product of what it reads (int8 x's integer sums are exact). */
    double worst[K] = {0};
    for (uint32_t r = 0; r < rows; r++) {
        double d[K] = {0};
        for (uint32_t b = 0; b < nb; b++) {
            double s = 0, sf4 = 0;
            long si = 0, s4 = 0;
            for (uint32_t c = b * 32; c < b * 32 + 32; c++) {
                s += (double)wq[(size_t)r * cols + c] * xh[c];
                si += (long)wq[(size_t)r * cols + c] * xqh[c];
                s4 += ((long)codes[(size_t)r * cols + c] - 8) * xqh[c];
                sf4 += ((double)codes[(size_t)r * cols + c] - 8) * xh[c];
            }
            double sc = wsh[(size_t)r * nb + b];
            d[0] += s * sc, d[1] += (double)si * sc * xsh[b], d[2] += (double)s4 * sc * xsh[b], d[5] += sf4 * sc;
            /* the Q4_K unit: ggml's get_scale_min_k4 of sub-block b % 8 */
            const uint8_t *h = hdh + 16 * ((size_t)r * (nb / 8) + b / 8), *sb = h + 4;
            uint16_t dh, mh;
            memcpy(&dh, h, 2), memcpy(&mh, h + 2, 2);
            uint32_t j = b % 8, scj = j < 4 ? sb[j] & 63 : (sb[j + 4] & 15) | (sb[j - 4] >> 6) << 4;
            uint32_t mj = j < 4 ? sb[j + 4] & 63 : (sb[j + 4] >> 4) | (sb[j] >> 6) << 4;
            float a = half_to_float(dh) * (float)scj, c = -(half_to_float(mh) * (float)mj);
            for (uint32_t i = 0; i < 32; i++) d[7] += ((double)a * codes[(size_t)r * cols + b * 32 + i] + c) * xh[b * 32 + i];
        }
        d[3] = d[0], d[4] = d[1], d[6] = d[2]; /* the tiles: the same products */
        for (int k = 0; k < K; k++) worst[k] = fmax(worst[k], fabs(((float *)y[k].host)[r] - d[k]) / (fabs(d[k]) + 1));
    }
    double med[K];
    for (int k = 0; k < K; k++) {
        qsort(t[k], (size_t)rounds, sizeof t[k][0], cmp);
        med[k] = t[k][rounds / 2];
        printf("%-22s median %7.2f ms (%.2f-%.2f), %.2fx the first; error vs double %.1e\n", name[k], med[k],
               t[k][0], t[k][rounds - 1], med[0] / med[k], worst[k]);
    }
    printf("(%u rows x %u columns, %d interleaved rounds; *: x quantized in the kernel; in the tile, int8 x is "
           "%.2fx f32 x for q8 weights and %.2fx for q4; the lean q4 unit is %.2fx the q8 unit, the q4_k unit %.2fx)\n",
           rows, cols, rounds, med[3] / med[4], med[5] / med[6], med[3] / med[5], med[3] / med[7]);
    free(codes);
    int bad = 0;
    for (int k = 0; k < K; k++) bad |= worst[k] > 1e-3;
    return bad;
}
