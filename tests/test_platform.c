/* test_platform.c — the Vulkan layer: device creation, caps, arena allocation (host and
 * device memory, alignment, spans above one binding), uploads and downloads, recorded
 * copies and fills, timestamps, and sticky recording errors. */
#include <stdlib.h>
#include <string.h>

#include "platform/vk.h"
#include "tests/testutil.h"

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
    CHECK(strstr(err.msg, "99") != NULL);

    test_memory(vk);

    char first[512];
    uint32_t nv = ember_vk_validation_count(vk, first, sizeof first);
    CHECKF(nv == 0, "%u validation messages, first: %s", nv, first);
    ember_vk_destroy(vk);
    return tu_finish("test_platform");
}
