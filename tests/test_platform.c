/* test_platform.c — the Vulkan layer: device creation, caps, arena allocation (host and
 * device memory, alignment, spans above one binding), uploads and downloads (and through
 * staging with the discrete memory mode, with flushes and invalidations), recorded
 * copies and fills, timestamps, sticky recording errors, texel views and pipelines with
 * texel, uniform and storage bindings. */
#include <stdlib.h>
#include <string.h>

#include "ember_shaders.h"
#include "platform/vk.h"
#include "testutil.h"

static void test_memory(ember_vk *vk)
{
    const ember_vk_caps *caps = ember_vk_get_caps(vk);
    ember_err err = {0};
    ember_vk_arena *a;
    CHECK(ember_vk_arena_create(vk, &a, &err) == EMBER_OK);

    ember_vk_span dev, host, odd;
    CHECK(ember_vk_alloc(a, 1000, EMBER_VK_MEM_DEVICE, &dev, &err) == EMBER_OK);
    CHECK(ember_vk_alloc(a, 4096, EMBER_VK_MEM_HOST, &host, &err) == EMBER_OK);
    CHECK(ember_vk_alloc(a, 12, EMBER_VK_MEM_DEVICE, &odd, &err) == EMBER_OK);
    CHECK(host.host != NULL);
    /* Vulkan guarantees host-visible coherent memory for buffers: no flushes needed. */
    CHECK(host.noncoherent == VK_NULL_HANDLE);
    CHECK(dev.offset % caps->min_storage_align == 0 && odd.offset % caps->min_storage_align == 0);
    CHECK(odd.buffer != dev.buffer || odd.offset >= dev.offset + dev.size);
    CHECK(ember_vk_alloc(a, 0, EMBER_VK_MEM_DEVICE, &odd, &err) == EMBER_ERR_INVALID_ARG);

    /* Round trip through device memory. */
    uint8_t in[1000], out[1000];
    for (int i = 0; i < 1000; i++) in[i] = (uint8_t)(i * 7 + 3);
    CHECK(ember_vk_upload(vk, &dev, 0, in, sizeof in, &err) == EMBER_OK);
    memset(out, 0, sizeof out);
    CHECK(ember_vk_download(vk, &dev, 0, out, sizeof out, &err) == EMBER_OK);
    CHECK(memcmp(in, out, sizeof in) == 0);
    CHECK(ember_vk_upload(vk, &dev, 900, in, 200, &err) == EMBER_ERR_INVALID_ARG);

    /* A span larger than one storage binding can be allocated (and is bound in parts). */
    uint64_t big = caps->max_storage_range + (1u << 20);
    if (big <= caps->max_alloc && big < (1ull << 31)) {
        ember_vk_span s;
        CHECK(ember_vk_alloc(a, big, EMBER_VK_MEM_DEVICE, &s, &err) == EMBER_OK);
        CHECK(s.size == big);
        ember_vk_span tail = ember_vk_span_sub(s, caps->max_storage_range, 1u << 20);
        CHECK(tail.size == (1u << 20) && tail.offset == s.offset + caps->max_storage_range);
        CHECK(ember_vk_upload(vk, &s, big - 1000, in, 1000, &err) == EMBER_OK);
        CHECK(ember_vk_download(vk, &tail, (1u << 20) - 1000, out, 1000, &err) == EMBER_OK);
        CHECK(memcmp(in, out, 1000) == 0);
    }
    CHECK(ember_vk_arena_bytes(a) > 0);

    /* Recorded copy + fill, with timestamps around them. */
    ember_vk_cmd *c;
    CHECK(ember_vk_cmd_create(vk, &c, &err) == EMBER_OK);
    for (int round = 0; round < 2; round++) {
        CHECK(ember_vk_cmd_begin(c, &err) == EMBER_OK);
        ember_vk_cmd_timestamp(c, 0);
        ember_vk_cmd_copy(c, &dev, &host, 1000);
        ember_vk_span tail = ember_vk_span_sub(host, 1024, 1024);
        ember_vk_cmd_fill(c, &tail, 0xABCD0000u + (uint32_t)round);
        ember_vk_cmd_barrier(c);
        ember_vk_cmd_timestamp(c, 1);
        CHECK(ember_vk_cmd_submit(c, &err) == EMBER_OK);
        CHECK(memcmp(host.host, in, 1000) == 0);
        uint32_t w;
        memcpy(&w, (char *)host.host + 1024 + 4 * 100, 4);
        CHECK(w == 0xABCD0000u + (uint32_t)round);
        if (caps->timestamp_period_ns > 0) CHECK(ember_vk_cmd_elapsed_ns(c, 0, 1) >= 0);
        CHECK(ember_vk_cmd_elapsed_ns(c, 0, 5) < 0);
    }
    /* A recording error is kept and returned by submit, with a message. */
    CHECK(ember_vk_cmd_begin(c, &err) == EMBER_OK);
    ember_vk_cmd_copy(c, &odd, &host, 1u << 20);
    CHECK(ember_vk_cmd_submit(c, &err) == EMBER_ERR_INVALID_ARG);
    CHECK(strstr(err.msg, "copy") != NULL);
    ember_vk_cmd_destroy(c);
    ember_vk_arena_destroy(a);
}

/* The discrete-GPU path on any device (ember_vk_opts.discrete_memory): device-local
 * spans are never mapped, so uploads and read-backs go through staging (counted), in
 * pieces when larger than the staging buffer; host spans stay mapped and are flushed and
 * invalidated as if not coherent. */
static void test_discrete_memory(void)
{
    ember_err err = {0};
    ember_vk_opts o = {.validation = tu_validation(), .discrete_memory = true};
    ember_vk *vk;
    ember_status s = ember_vk_create(&o, &vk, &err);
    CHECKF(s == EMBER_OK, "%s", err.msg);
    if (s != EMBER_OK) return;
    ember_vk_mem_stats st;
    ember_vk_memory_stats(vk, &st);
    CHECK(st.discrete && st.staged_uploads == 0 && st.flushes == 0);
    ember_vk_arena *a;
    CHECK(ember_vk_arena_create(vk, &a, &err) == EMBER_OK);
    ember_vk_span dev, host;
    CHECK(ember_vk_alloc(a, 1000, EMBER_VK_MEM_DEVICE, &dev, &err) == EMBER_OK);
    CHECK(ember_vk_alloc(a, 4096, EMBER_VK_MEM_HOST, &host, &err) == EMBER_OK);
    CHECK(dev.host == NULL && dev.noncoherent == VK_NULL_HANDLE);
    CHECK(host.host != NULL && host.noncoherent != VK_NULL_HANDLE);

    /* Round trip through staging. */
    uint8_t in[1000], out[1000];
    for (int i = 0; i < 1000; i++) in[i] = (uint8_t)(i * 13 + 1);
    CHECK(ember_vk_upload(vk, &dev, 0, in, sizeof in, &err) == EMBER_OK);
    memset(out, 0, sizeof out);
    CHECK(ember_vk_download(vk, &dev, 0, out, sizeof out, &err) == EMBER_OK);
    CHECK(memcmp(in, out, sizeof in) == 0);
    ember_vk_memory_stats(vk, &st);
    CHECK(st.staged_uploads == 1 && st.staged_downloads == 1);
    CHECK(st.flushes >= 1 && st.invalidates >= 1); /* the staging buffer's */

    /* More than the staging buffer (64 MiB): copied in pieces. */
    size_t big = (64u << 20) + 4096 * 3 + 100;
    uint8_t *bin = malloc(big), *bout = malloc(big);
    ember_vk_span bs;
    CHECK(bin && bout && ember_vk_alloc(a, big, EMBER_VK_MEM_DEVICE, &bs, &err) == EMBER_OK);
    if (bin && bout && bs.size == big) {
        for (size_t i = 0; i < big; i++) bin[i] = (uint8_t)(i * 31 + (i >> 20));
        CHECK(ember_vk_upload(vk, &bs, 0, bin, big, &err) == EMBER_OK);
        memset(bout, 0, big);
        CHECK(ember_vk_download(vk, &bs, 0, bout, big, &err) == EMBER_OK);
        CHECK(memcmp(bin, bout, big) == 0);
        CHECK(ember_vk_download(vk, &bs, big - 1000, out, 1000, &err) == EMBER_OK);
        CHECK(memcmp(bin + big - 1000, out, 1000) == 0);
    }
    free(bin);
    free(bout);

    /* Host spans: the CPU's writes flushed before a device copy reads them, the device's
     * writes invalidated before the CPU reads them; sub-spans keep their memory and odd
     * offsets and sizes are widened to whole atoms. */
    ember_vk_cmd *c;
    CHECK(ember_vk_cmd_create(vk, &c, &err) == EMBER_OK);
    ember_vk_memory_stats(vk, &st);
    uint64_t flushes = st.flushes, invalidates = st.invalidates;
    memcpy(host.host, in, 1000);
    ember_vk_span odd = ember_vk_span_sub(host, 3, 997);
    CHECK(odd.noncoherent == host.noncoherent);
    ember_vk_span two[2] = {ember_vk_span_sub(host, 0, 3), odd};
    CHECK(ember_vk_flush(vk, two, 2, &err) == EMBER_OK);
    CHECK(ember_vk_cmd_begin(c, &err) == EMBER_OK);
    ember_vk_cmd_copy(c, &host, &dev, 1000);
    ember_vk_span tail = ember_vk_span_sub(host, 2048, 1024);
    ember_vk_cmd_fill(c, &tail, 0x12345678u);
    CHECK(ember_vk_cmd_submit(c, &err) == EMBER_OK);
    CHECK(ember_vk_invalidate(vk, &tail, 1, &err) == EMBER_OK);
    uint32_t w;
    memcpy(&w, (char *)host.host + 2048 + 4 * 10, 4);
    CHECK(w == 0x12345678u);
    memset(out, 0, sizeof out);
    CHECK(ember_vk_download(vk, &dev, 0, out, sizeof out, &err) == EMBER_OK);
    CHECK(memcmp(in, out, sizeof in) == 0);
    ember_vk_memory_stats(vk, &st);
    CHECK(st.flushes == flushes + 2 && st.invalidates >= invalidates + 2);
    /* Empty and unmapped spans are skipped. */
    ember_vk_span skip[2] = {ember_vk_span_sub(host, 0, 0), dev};
    CHECK(ember_vk_flush(vk, skip, 2, &err) == EMBER_OK);
    ember_vk_memory_stats(vk, &st);
    CHECK(st.flushes == flushes + 2);
    ember_vk_cmd_destroy(c);
    ember_vk_arena_destroy(a);

    char first[512];
    uint32_t nv = ember_vk_validation_count(vk, first, sizeof first);
    CHECKF(nv == 0, "discrete memory: %u validation messages, first: %s", nv, first);
    ember_vk_destroy(vk);
}

/* IEEE half of small integers (exact), for the R16F view. */
static uint16_t half_of(int v)
{
    if (v == 0) return 0;
    int e = 0;
    while ((1 << (e + 1)) <= v) e++;
    return (uint16_t)((e + 15) << 10 | ((v - (1 << e)) << (10 - e)));
}

/* Texel views: creation, ownership by the arena, the checks, and a dispatch of
 * shaders/bindings_probe.comp reading an RGBA32F view, an R16F view and a uniform
 * buffer, with its result written through a storage buffer. */
static void test_texel(ember_vk *vk)
{
    const ember_vk_caps *caps = ember_vk_get_caps(vk);
    ember_err err = {0};
    if (!caps->texel_rgba32f || !caps->texel_r16f) {
        printf("no RGBA32F / R16F uniform texel buffers: texel checks skipped\n");
        return;
    }
    CHECK(caps->max_texel_elements >= 65536 && caps->min_texel_align >= 1);
    CHECK(caps->max_uniform_range >= 16384 && caps->min_uniform_align >= 1);
    ember_vk_arena *a;
    CHECK(ember_vk_arena_create(vk, &a, &err) == EMBER_OK);
    enum { N = 8 };
    ember_vk_span rgba, r16, uni, out;
    CHECK(ember_vk_alloc(a, 16 * N + 8, EMBER_VK_MEM_HOST, &rgba, &err) == EMBER_OK);
    CHECK(ember_vk_alloc(a, 2 * N, EMBER_VK_MEM_HOST, &r16, &err) == EMBER_OK);
    CHECK(ember_vk_alloc(a, 64, EMBER_VK_MEM_HOST, &uni, &err) == EMBER_OK);
    CHECK(ember_vk_alloc(a, 4 * 6 * N, EMBER_VK_MEM_HOST, &out, &err) == EMBER_OK);
    for (int i = 0; i < 4 * N; i++) ((float *)rgba.host)[i] = 0.5f * (float)i - 3.0f;
    for (int i = 0; i < N; i++) ((uint16_t *)r16.host)[i] = half_of(3 * i + 1);
    for (int i = 0; i < 16; i++) ((uint32_t *)uni.host)[i] = 100u + (uint32_t)i;

    CHECK(ember_vk_texel_view(a, &rgba, VK_FORMAT_R32G32B32A32_SFLOAT, &err) == EMBER_OK && rgba.view);
    CHECK(ember_vk_texel_view(a, &r16, VK_FORMAT_R16_SFLOAT, &err) == EMBER_OK && r16.view);
    /* The view survives a sub-span at offset 0 only. */
    CHECK(ember_vk_span_sub(rgba, 0, 16).view == rgba.view);
    CHECK(ember_vk_span_sub(rgba, 16, 16).view == VK_NULL_HANDLE);
    /* Refused: a format outside the kernels' set, an offset off the texel alignment, an
     * empty range. */
    ember_vk_span bad = rgba;
    bad.view = VK_NULL_HANDLE;
    CHECK(ember_vk_texel_view(a, &bad, VK_FORMAT_R8G8B8A8_SRGB, &err) == EMBER_ERR_UNSUPPORTED && !bad.view);
    ember_vk_span odd = ember_vk_span_sub(rgba, 4, 64);
    if (caps->min_texel_align > 4)
        CHECK(ember_vk_texel_view(a, &odd, VK_FORMAT_R32G32B32A32_SFLOAT, &err) == EMBER_ERR_UNSUPPORTED);
    ember_vk_span tiny = ember_vk_span_sub(rgba, 0, 8);
    tiny.view = VK_NULL_HANDLE;
    CHECK(ember_vk_texel_view(a, &tiny, VK_FORMAT_R32G32B32A32_SFLOAT, &err) == EMBER_ERR_UNSUPPORTED);

    ember_vk_binding_kind kinds[4] = {EMBER_VK_BIND_STORAGE, EMBER_VK_BIND_TEXEL, EMBER_VK_BIND_TEXEL,
                                      EMBER_VK_BIND_UNIFORM};
    ember_vk_pipeline *p;
    ember_status s = ember_vk_pipeline_create_ex(vk, "bindings_probe", ember_spv_bindings_probe,
                                                 ember_spv_bindings_probe_bytes, 4, kinds, 4, NULL, 0, &p, &err);
    CHECKF(s == EMBER_OK, "%s", err.msg);
    if (s != EMBER_OK) {
        ember_vk_arena_destroy(a);
        return;
    }
    ember_vk_cmd *c;
    CHECK(ember_vk_cmd_create(vk, &c, &err) == EMBER_OK);
    uint32_t n = N;
    ember_vk_span b[4] = {out, rgba, r16, uni};
    CHECK(ember_vk_cmd_begin(c, &err) == EMBER_OK);
    ember_vk_cmd_dispatch(c, p, b, &n, 1, 1, 1);
    CHECK(ember_vk_cmd_submit(c, &err) == EMBER_OK);
    const float *o = out.host;
    for (int i = 0; i < N; i++) {
        for (int j = 0; j < 4; j++) CHECK(o[6 * i + j] == 0.5f * (float)(4 * i + j) - 3.0f);
        CHECK(o[6 * i + 4] == (float)(3 * i + 1));
        CHECK(o[6 * i + 5] == (float)(100 + i));
    }
    /* A texel binding without a view is a recording error, reported at submit. */
    b[2].view = VK_NULL_HANDLE;
    CHECK(ember_vk_cmd_begin(c, &err) == EMBER_OK);
    ember_vk_cmd_dispatch(c, p, b, &n, 1, 1, 1);
    CHECK(ember_vk_cmd_submit(c, &err) == EMBER_ERR_INVALID_ARG && strstr(err.msg, "texel view"));
    /* A uniform binding beyond maxUniformBufferRange is refused the same way. */
    b[2] = r16;
    b[3].size = (VkDeviceSize)caps->max_uniform_range + 16;
    CHECK(ember_vk_cmd_begin(c, &err) == EMBER_OK);
    ember_vk_cmd_dispatch(c, p, b, &n, 1, 1, 1);
    CHECK(ember_vk_cmd_submit(c, &err) == EMBER_ERR_INVALID_ARG && strstr(err.msg, "maxUniformBufferRange"));
    ember_vk_cmd_destroy(c);
    ember_vk_pipeline_destroy(vk, p);
    ember_vk_arena_destroy(a); /* destroys the views */
}

int main(void)
{
    ember_err err = {0};
    ember_vk_caps list[8];
    uint32_t n = 0;
    CHECK(ember_vk_list_devices(list, 8, &n, &err) == EMBER_OK);
    if (n == 0) return tu_skip("no Vulkan device");

    ember_vk_opts o = {.validation = tu_validation()};
    ember_vk *vk;
    ember_status s = ember_vk_create(&o, &vk, &err);
    CHECKF(s == EMBER_OK, "%s", err.msg);
    if (s != EMBER_OK) return tu_finish("test_platform");
    const ember_vk_caps *caps = ember_vk_get_caps(vk);
    printf("device: %s, subgroup %u, max storage range %llu, max alloc %llu\n", caps->device_name,
           caps->subgroup_size, (unsigned long long)caps->max_storage_range, (unsigned long long)caps->max_alloc);
    CHECK(caps->subgroup_size >= 1);
    CHECK(caps->max_storage_range >= (1u << 27) || !caps->is_cpu);
    CHECK(caps->min_storage_align >= 1);
    CHECK(caps->max_push >= 128);

    o.device_index = 99;
    ember_vk *none;
    CHECK(ember_vk_create(&o, &none, &err) == EMBER_ERR_NO_DEVICE && none == NULL);
    /* device_index 99 is the 99th device: named 98, counted from 0 as `ember info` and
     * --device count. */
    CHECK(strstr(err.msg, "device 98 requested") != NULL);

    test_memory(vk);
    test_texel(vk);
    test_discrete_memory();

    char first[512];
    uint32_t nv = ember_vk_validation_count(vk, first, sizeof first);
    CHECKF(nv == 0, "%u validation messages, first: %s", nv, first);
    ember_vk_destroy(vk);
    return tu_finish("test_platform");
}
