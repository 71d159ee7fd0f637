/* test_pipeline_cache.c — the on-disk pipeline cache and pipelines made on demand:
 *  - ember_vk_pipeline_cache_check trusts a file only when Ember's header (magic,
 *    version, driver, size, checksum) and Vulkan's (length, version, vendor, device,
 *    pipelineCacheUUID) match: every other file is corrupt, old or foreign;
 *  - a model loaded with the cache home (XDG_CACHE_HOME; LOCALAPPDATA on Windows) in a
 *    temporary folder writes its cache file there; a second load reads it (and, nothing
 *    new compiled, leaves it untouched: same bytes, size, mtime and inode); both give the
 *    same greedy tokens;
 *  - a truncated file, a file whose UUID or vendor was changed (checksum fixed, so that
 *    the Vulkan header check is what refuses it) and a file of another Ember version are
 *    ignored and replaced by a valid one, and the model still runs right;
 *  - a model makes fewer pipelines than the kernels' full set; an engine with a Q8_0 KV
 *    cache adds its attention pipelines when it is created, also when two engines are
 *    created from two threads at once;
 *  - no_pipeline_cache neither reads nor writes a file.
 * Nothing here compares times. */
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "engine/gpu/kernels.h"
#include "engine/model_handle.h"
#include "platform/os_file.h"
#include "platform/os_thread.h"
#include "platform/vk_pipeline_cache.h"
#include "testutil.h"

#define HDR EMBER_VK_CACHE_HEADER_BYTES
#define N_GEN 6

static char model_path[512];

/* ---- the file check, on forged bytes (no device) -------------------------------------- */

static void put32(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++) p[i] = (uint8_t)(v >> 8 * i);
}

static void put64(uint8_t *p, uint64_t v)
{
    put32(p, (uint32_t)v);
    put32(p + 4, (uint32_t)(v >> 32));
}

static void fix_sum(uint8_t *f, size_t n)
{
    put64(f + 40, ember_vk_pipeline_cache_sum(f + HDR, n - HDR));
}

/* A file as Ember writes it: its header, then Vulkan's header and 16 bytes of data. */
static size_t forge(uint8_t *f, const ember_vk_cache_key *key)
{
    size_t n = HDR + 32 + 16;
    memset(f, 0, n);
    memcpy(f, "EMBERPC\1", 8);
    memcpy(f + 8, EMBER_VERSION_STRING, strlen(EMBER_VERSION_STRING));
    put32(f + 24, key->driver);
    put64(f + 32, n - HDR);
    put32(f + HDR, 32);
    put32(f + HDR + 4, VK_PIPELINE_CACHE_HEADER_VERSION_ONE);
    put32(f + HDR + 8, key->vendor);
    put32(f + HDR + 12, key->device);
    memcpy(f + HDR + 16, key->uuid, VK_UUID_SIZE);
    for (int i = 0; i < 16; i++) f[HDR + 32 + i] = (uint8_t)(i * 7);
    fix_sum(f, n);
    return n;
}

static ember_vk_cache_file check_edit(const ember_vk_cache_key *key, size_t at, uint8_t value, bool resum)
{
    uint8_t f[128];
    size_t n = forge(f, key);
    f[at] = value;
    if (resum) fix_sum(f, n);
    return ember_vk_pipeline_cache_check(f, n, key);
}

static void test_check(void)
{
    ember_vk_cache_key key = {.vendor = 0x10de, .device = 0x2335, .driver = 0x91000000};
    for (unsigned i = 0; i < VK_UUID_SIZE; i++) key.uuid[i] = (uint8_t)(0xa0 + i);
    uint8_t f[128];
    size_t n = forge(f, &key);
    CHECK(ember_vk_pipeline_cache_check(f, n, &key) == EMBER_VK_CACHE_USED);
    for (size_t cut = 0; cut < n; cut += 5)
        CHECK(ember_vk_pipeline_cache_check(f, cut, &key) == EMBER_VK_CACHE_CORRUPT);
    CHECK(check_edit(&key, 0, 'X', false) == EMBER_VK_CACHE_CORRUPT);           /* magic */
    CHECK(check_edit(&key, 8, '9', false) == EMBER_VK_CACHE_OLD);               /* Ember's version */
    CHECK(check_edit(&key, 24, 0x01, false) == EMBER_VK_CACHE_FOREIGN);         /* driverVersion */
    CHECK(check_edit(&key, 32, 0x20, false) == EMBER_VK_CACHE_CORRUPT);         /* data size */
    CHECK(check_edit(&key, HDR + 40, 0xff, false) == EMBER_VK_CACHE_CORRUPT);   /* a data byte: checksum */
    CHECK(check_edit(&key, HDR + 16, 0x00, false) == EMBER_VK_CACHE_CORRUPT);   /* UUID, checksum not fixed */
    CHECK(check_edit(&key, HDR, 16, true) == EMBER_VK_CACHE_CORRUPT);           /* header length < 32 */
    CHECK(check_edit(&key, HDR, 200, true) == EMBER_VK_CACHE_CORRUPT);          /* header length > data */
    CHECK(check_edit(&key, HDR + 4, 2, true) == EMBER_VK_CACHE_CORRUPT);        /* header version */
    CHECK(check_edit(&key, HDR + 8, 0x02, true) == EMBER_VK_CACHE_FOREIGN);     /* vendorID */
    CHECK(check_edit(&key, HDR + 12, 0x36, true) == EMBER_VK_CACHE_FOREIGN);    /* deviceID */
    CHECK(check_edit(&key, HDR + 31, 0x00, true) == EMBER_VK_CACHE_FOREIGN);    /* pipelineCacheUUID */
}

/* ---- models ------------------------------------------------------------------------------ */

static int on_token(void *user, ember_request_id id, uint32_t tok, const char *text, size_t len)
{
    uint32_t *t = user;
    if (t[0] < N_GEN) t[1 + t[0]++] = tok;
    return 0;
}

/* Greedy tokens of a fixed prompt: t[0] = count, t[1..]. */
static bool generate(ember_model *m, ember_kv_type kv, uint32_t t[1 + N_GEN])
{
    static const uint32_t prompt[] = {1, 17, 42, 99, 7, 250, 3};
    ember_engine_opts eo = {.max_seqs = 2, .kv_type = kv};
    ember_engine *e = NULL;
    memset(t, 0, (1 + N_GEN) * sizeof *t);
    bool ok = ember_engine_create(m, &eo, &e) == EMBER_OK;
    ember_request_desc d = {.tokens = prompt, .n_tokens = 7, .max_tokens = N_GEN, .ignore_eos = 1,
                            .on_token = on_token, .user = t};
    ok = ok && ember_submit(e, &d, NULL) == EMBER_OK;
    ember_status s = EMBER_OK;
    while (ok && (s = ember_engine_step(e)) == EMBER_OK) {}
    CHECKF(ok && s == EMBER_IDLE && t[0] == N_GEN, "generate: %s", e ? ember_engine_error(e) : "no engine");
    ember_engine_destroy(e);
    return ok && t[0] == N_GEN;
}

static ember_model *load(int no_cache)
{
    ember_model_opts mo = {.enable_validation = tu_validation(), .memory = tu_memory_mode(),
                           .no_pipeline_cache = no_cache};
    ember_model *m = NULL;
    if (ember_model_load(model_path, &mo, &m) != EMBER_OK) {
        fprintf(stderr, "load: %s\n", ember_model_error(m));
        ember_model_free(m);
        return NULL;
    }
    return m;
}

static ember_kernels_stats stats_of(ember_model *m)
{
    ember_kernels_stats st;
    ember_kernels_get_stats(m->gpu->kernels, &st);
    return st;
}

static void finish_model(ember_model *m)
{
    char first[512];
    uint32_t nv = ember_model_validation_messages(m, first, sizeof first);
    CHECKF(nv == 0, "%u validation messages: %s", nv, first);
    ember_model_free(m);
}

static uint8_t file_buf[16 << 20]; /* a real driver's cache holds compiled code */

static size_t read_file(const char *path, uint8_t *buf, size_t cap)
{
    FILE *f = fopen(path, "rb");
    if (!f) return 0;
    size_t n = fread(buf, 1, cap, f);
    fclose(f);
    return n;
}

static void write_file(const char *path, const uint8_t *buf, size_t n)
{
    FILE *f = fopen(path, "wb");
    CHECK(f && fwrite(buf, 1, n, f) == n);
    if (f) fclose(f);
}

/* The key a valid file of this device carries (from the file itself). */
static ember_vk_cache_key key_of(const uint8_t *f)
{
    ember_vk_cache_key k = {.driver = f[24] | f[25] << 8 | f[26] << 16 | (uint32_t)f[27] << 24,
                            .vendor = f[HDR + 8] | f[HDR + 9] << 8 | f[HDR + 10] << 16 | (uint32_t)f[HDR + 11] << 24,
                            .device = f[HDR + 12] | f[HDR + 13] << 8 | f[HDR + 14] << 16 |
                                      (uint32_t)f[HDR + 15] << 24};
    memcpy(k.uuid, f + HDR + 16, VK_UUID_SIZE);
    return k;
}

typedef struct engine_job {
    ember_model *m;
    ember_kv_type kv;
    uint32_t t[1 + N_GEN];
    bool ok;
} engine_job;

static void engine_thread(void *arg)
{
    engine_job *j = arg;
    j->ok = generate(j->m, j->kv, j->t);
}

/* Two engines, F32 and Q8_0 caches, created and run from two threads at once: the Q8_0
 * cache's pipelines come on top of the f32_pipelines of a model with an F32 engine. */
static void test_two_threads(const uint32_t *ref, uint32_t f32_pipelines)
{
    ember_model *m = load(0);
    if (!m) {
        CHECK(m != NULL);
        return;
    }
    engine_job j[2] = {{.m = m, .kv = EMBER_KV_F32}, {.m = m, .kv = EMBER_KV_Q8_0}};
    ember_thread th[2];
    bool started[2];
    for (int i = 0; i < 2; i++) CHECK(started[i] = ember_thread_start(&th[i], engine_thread, &j[i]));
    for (int i = 0; i < 2; i++)
        if (started[i]) ember_thread_join(&th[i]);
    CHECK(j[0].ok && j[1].ok);
    CHECK(memcmp(j[0].t, ref, sizeof j[0].t) == 0);
    CHECKF(stats_of(m).pipelines > f32_pipelines, "a Q8_0 cache's pipelines: %u, F32 only %u",
           stats_of(m).pipelines, f32_pipelines);
    finish_model(m);
}

/* A model makes its own pipelines only: fewer than the kernels' every variant. */
static void test_fewer(ember_model *m)
{
    ember_kernels *all = NULL;
    ember_err err = {{0}};
    CHECKF(ember_kernels_create_opts(m->vk, NULL, &all, &err) == EMBER_OK, "%s", err.msg);
    if (!all) return;
    ember_kernels_stats a, own = stats_of(m);
    ember_kernels_get_stats(all, &a);
    printf("pipelines: %u made for the model and an F32 engine, %u in the full set\n", own.pipelines, a.pipelines);
    CHECK(own.pipelines > 0 && own.pipelines * 3 < a.pipelines);
    ember_kernels_destroy(all);
}

/* Damages the file with edit, loads: the file must be refused as expected, replaced by a
 * valid one, and the model must give the reference tokens. */
static void test_damaged(const char *what, const char *path, ember_vk_cache_file expect,
                         size_t (*edit)(uint8_t *f, size_t n), const uint32_t *ref)
{
    uint8_t *f = file_buf;
    size_t n = read_file(path, f, sizeof file_buf);
    ember_vk_cache_key key = key_of(f);
    n = edit(f, n);
    write_file(path, f, n);
    ember_model *m = load(0);
    CHECKF(m != NULL, "%s: the model did not load", what);
    if (!m) return;
    ember_kernels_stats st = stats_of(m);
    CHECKF(st.cache.file == expect && st.cache.read_bytes == 0, "%s: file judged %d, %llu bytes read", what,
           (int)st.cache.file, (unsigned long long)st.cache.read_bytes);
    CHECKF(st.cache.writes >= 1, "%s: not replaced", what);
    n = read_file(path, f, sizeof file_buf);
    CHECKF(ember_vk_pipeline_cache_check(f, n, &key) == EMBER_VK_CACHE_USED, "%s: the new file is not valid", what);
    uint32_t t[1 + N_GEN];
    if (generate(m, EMBER_KV_F32, t)) CHECKF(memcmp(t, ref, sizeof t) == 0, "%s: other tokens", what);
    finish_model(m);
}

static size_t truncate_half(uint8_t *f, size_t n) { return n / 2; }

static size_t other_uuid(uint8_t *f, size_t n)
{
    f[HDR + 16] ^= 0x5a;
    fix_sum(f, n);
    return n;
}

static size_t other_vendor(uint8_t *f, size_t n)
{
    f[HDR + 8] ^= 0x01;
    fix_sum(f, n);
    return n;
}

static size_t old_version(uint8_t *f, size_t n)
{
    memcpy(f + 8, "0.0.1\0\0\0", 8);
    return n;
}

/* A file rewritten, even with the same bytes, has another inode (it is replaced through a
 * rename) or mtime; Windows has no inode numbers (0), and mtime in seconds is what both
 * systems' struct stat has. */
static bool same_file(const struct stat *a, const struct stat *b)
{
    return a->st_size == b->st_size && a->st_mtime == b->st_mtime && a->st_ino == b->st_ino;
}

static bool file_exists(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (f) fclose(f);
    return f != NULL;
}

static void test_no_cache(const char *path, const uint32_t *ref)
{
    remove(path);
    ember_model *m = load(1);
    CHECK(m != NULL);
    if (!m) return;
    uint32_t t[1 + N_GEN];
    if (generate(m, EMBER_KV_F32, t)) CHECK(memcmp(t, ref, sizeof t) == 0);
    ember_kernels_stats st = stats_of(m);
    CHECK(st.cache_path[0] == 0 && st.cache.writes == 0);
    finish_model(m);
    CHECK(!file_exists(path));
}

int main(void)
{
    test_check();
    char cache[512];
    snprintf(cache, sizeof cache, "%s/pipeline_cache.%d", tu_tmp_dir(), (int)getpid());
    /* The cache folder of this process: never the user's. */
    if (!ember_cache_home_set(cache)) return tu_skip("cannot set the cache home");
    snprintf(model_path, sizeof model_path, "%s/pipeline_cache_model.gguf", tu_tmp_dir());
    if (!tu_make_model(model_path, "--dim 64 --layers 2 --heads 4 --kv-heads 2 --ffn 128 --vocab 300 --ctx 128 "
                                   "--type f32 --seed 9"))
        return tu_finish("test_pipeline_cache");
    ember_model *m = load(0);
    if (!m) return tu_skip("cannot load the test model on a Vulkan device");
    uint32_t ref[1 + N_GEN];
    generate(m, EMBER_KV_F32, ref);
    ember_kernels_stats st = stats_of(m);
    char path[1024];
    snprintf(path, sizeof path, "%s", st.cache_path);
    CHECKF(strncmp(path, cache, strlen(cache)) == 0, "cache file %s outside %s", path, cache);
    CHECK(st.cache.file == EMBER_VK_CACHE_NONE && st.cache.writes >= 1);
    test_fewer(m);
    uint32_t f32_pipelines = st.pipelines;
    finish_model(m);

    struct stat first, again;
    CHECKF(stat(path, &first) == 0 && first.st_size > HDR, "no cache file at %s", path);
    size_t n_before = read_file(path, file_buf, sizeof file_buf);
    uint8_t *before = malloc(n_before ? n_before : 1);
    memcpy(before, file_buf, n_before);
    m = load(0);
    CHECK(m != NULL);
    if (m) {
        uint32_t t[1 + N_GEN];
        if (generate(m, EMBER_KV_F32, t)) CHECK(memcmp(t, ref, sizeof t) == 0);
        st = stats_of(m);
        CHECKF(st.cache.file == EMBER_VK_CACHE_USED && st.cache.read_bytes == (uint64_t)first.st_size - HDR,
               "second load: file judged %d, %llu bytes read", (int)st.cache.file,
               (unsigned long long)st.cache.read_bytes);
        CHECKF(st.cache.writes == 0, "second load wrote the file %u times", st.cache.writes);
        finish_model(m);
    }
    CHECK(stat(path, &again) == 0 && same_file(&first, &again));
    CHECK(read_file(path, file_buf, sizeof file_buf) == n_before && memcmp(file_buf, before, n_before) == 0);
    free(before);

    test_two_threads(ref, f32_pipelines);
    test_damaged("truncated", path, EMBER_VK_CACHE_CORRUPT, truncate_half, ref);
    test_damaged("another UUID", path, EMBER_VK_CACHE_FOREIGN, other_uuid, ref);
    test_damaged("another vendor", path, EMBER_VK_CACHE_FOREIGN, other_vendor, ref);
    test_damaged("another Ember version", path, EMBER_VK_CACHE_OLD, old_version, ref);
    test_no_cache(path, ref);
    return tu_finish("test_pipeline_cache");
}
