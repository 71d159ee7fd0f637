/* test_host_device.c — Ember on the application's Vulkan device, and the memory budget:
 *  - ember_model_info.device_index names Ember's own device in ember_list_devices, and is
 *    0 on an application's device;
 *  - the test makes its own instance, device and queue as a game would and hands them
 *    over (ember_model_opts.vulkan), once with its vkGetInstanceProcAddr (Ember's Vulkan
 *    calls then go through the application's loader, which the test opens itself, as a
 *    game would) and once without: the tokens equal those on Ember's own device, Ember's
 *    submissions take the application's queue lock while a "renderer" thread submits to
 *    the same queue under it, and after ember_model_free the device is intact and can be
 *    destroyed with the validation layer reporting nothing left behind;
 *  - a step ordered after the application's work through its timeline semaphore;
 *  - a device made without the optional features still serves (Ember uses only what was
 *    enabled); a queue family without compute is refused with a message;
 *  - the memory budget: a model whose weights exceed it is refused with the numbers; an
 *    engine's pool is sized to what the budget leaves, shrinks when the budget drops
 *    (preempting, tokens unchanged) and grows back when it rises. */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <vulkan/vulkan.h> /* with VK_NO_PROTOTYPES: every call through host_vk */

#include "ember.h"
#include "engine_fixture.h"
#include "platform/os_library.h"
#include "platform/os_thread.h"
#include "testutil.h"

#define NREQ 4
#define NGEN 24

/* The Vulkan calls the "application" makes, through the loader it opens itself as a game
 * would (the system's, by the names platform/os_library.c knows). */
#define HOST_VK_FNS(X)                                                                                       \
    X(EnumeratePhysicalDevices) X(GetPhysicalDeviceQueueFamilyProperties) X(GetPhysicalDeviceFeatures2)      \
    X(CreateDevice) X(DestroyInstance) X(GetDeviceQueue) X(DeviceWaitIdle) X(DestroyDevice) X(CreateFence)  \
    X(DestroyFence) X(QueueSubmit) X(WaitForFences) X(ResetFences) X(CreateSemaphore) X(DestroySemaphore)   \
    X(SignalSemaphore) X(WaitSemaphores) X(GetSemaphoreCounterValue)

typedef struct host_vk {
    void *lib;
    PFN_vkGetInstanceProcAddr GetInstanceProcAddr;
    PFN_vkCreateInstance CreateInstance;
#define HOST_FN(name) PFN_vk##name name;
    HOST_VK_FNS(HOST_FN)
#undef HOST_FN
} host_vk;

/* Opens the loader; false when there is none. */
static bool host_vk_open(host_vk *vk)
{
    const char *const *names = ember_vulkan_library_names();
    for (size_t i = 0; !vk->GetInstanceProcAddr && names[i]; i++) {
        ember_library_close(vk->lib);
        vk->lib = ember_library_open(names[i]);
        vk->GetInstanceProcAddr =
            (PFN_vkGetInstanceProcAddr)(uintptr_t)ember_library_symbol(vk->lib, "vkGetInstanceProcAddr");
    }
    if (vk->GetInstanceProcAddr)
        vk->CreateInstance = (PFN_vkCreateInstance)(uintptr_t)vk->GetInstanceProcAddr(NULL, "vkCreateInstance");
    return vk->CreateInstance != NULL;
}

/* The rest, once there is an instance (device functions through the loader's trampolines). */
static bool host_vk_load(host_vk *vk, VkInstance instance)
{
    bool all = true;
#define HOST_FN(name)                                                                                        \
    vk->name = (PFN_vk##name)(uintptr_t)vk->GetInstanceProcAddr(instance, "vk" #name);                      \
    all &= vk->name != NULL;
    HOST_VK_FNS(HOST_FN)
#undef HOST_FN
    return all;
}

typedef struct host {
    host_vk vk;
    VkInstance instance;
    VkPhysicalDevice phys;
    VkDevice device;
    VkQueue queue;
    uint32_t family;
    VkPhysicalDeviceVulkan12Features f12;
    VkPhysicalDeviceVulkan11Features f11;
    VkPhysicalDeviceFeatures2 features;
    ember_mutex queue_mu;
    atomic_int locks;
    atomic_bool stop;
    int frames; /* the renderer's submissions */
} host;

static void lock_queue(void *user)
{
    host *h = user;
    ember_mutex_lock(&h->queue_mu);
    atomic_fetch_add(&h->locks, 1);
}

static void unlock_queue(void *user) { ember_mutex_unlock(&((host *)user)->queue_mu); }

static bool host_create(host *h, bool optional_features)
{
    memset(h, 0, sizeof *h);
    ember_mutex_init(&h->queue_mu);
    if (!host_vk_open(&h->vk)) return false;
    VkApplicationInfo app = {.sType = VK_STRUCTURE_TYPE_APPLICATION_INFO, .apiVersion = VK_API_VERSION_1_2};
    VkInstanceCreateInfo ici = {.sType = VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO, .pApplicationInfo = &app};
    if (h->vk.CreateInstance(&ici, NULL, &h->instance) != VK_SUCCESS) return false;
    if (!host_vk_load(&h->vk, h->instance)) return false;
    uint32_t n = 1;
    if (h->vk.EnumeratePhysicalDevices(h->instance, &n, &h->phys) < 0 || n == 0) return false;
    VkQueueFamilyProperties q[16];
    uint32_t nq = 16;
    h->vk.GetPhysicalDeviceQueueFamilyProperties(h->phys, &nq, q);
    for (h->family = 0; h->family < nq && !(q[h->family].queueFlags & VK_QUEUE_COMPUTE_BIT); h->family++) {}
    /* Enable what the device has, as a game that wants Ember's fast paths would. */
    h->f12 = (VkPhysicalDeviceVulkan12Features){.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES};
    h->f11 = (VkPhysicalDeviceVulkan11Features){.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_FEATURES,
                                                .pNext = &h->f12};
    h->features = (VkPhysicalDeviceFeatures2){.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2, .pNext = &h->f11};
    if (optional_features) h->vk.GetPhysicalDeviceFeatures2(h->phys, &h->features);
    else h->f11.pNext = NULL;
    float prio = 1;
    VkDeviceQueueCreateInfo qi = {.sType = VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO, .queueFamilyIndex = h->family,
                                  .queueCount = 1, .pQueuePriorities = &prio};
    VkDeviceCreateInfo dci = {.sType = VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO, .pNext = &h->features,
                              .queueCreateInfoCount = 1, .pQueueCreateInfos = &qi};
    if (h->vk.CreateDevice(h->phys, &dci, NULL, &h->device) != VK_SUCCESS) return false;
    h->vk.GetDeviceQueue(h->device, h->family, 0, &h->queue);
    return true;
}

static ember_vulkan_device host_desc(host *h)
{
    return (ember_vulkan_device){.instance = h->instance, .physical_device = h->phys, .device = h->device,
                                 .queue_family = h->family, .api_version = VK_API_VERSION_1_2,
                                 .enabled_features = &h->features, .lock_queue = lock_queue,
                                 .unlock_queue = unlock_queue, .queue_user = h};
}

static void host_destroy(host *h)
{
    if (h->device) {
        CHECK(h->vk.DeviceWaitIdle(h->device) == VK_SUCCESS);
        h->vk.DestroyDevice(h->device, NULL);
    }
    if (h->instance) h->vk.DestroyInstance(h->instance, NULL);
    ember_library_close(h->vk.lib);
    ember_mutex_destroy(&h->queue_mu);
}

/* The renderer: empty submissions with a fence, under the queue lock, until stopped. */
static void renderer_main(void *arg)
{
    host *h = arg;
    VkFence fence;
    VkFenceCreateInfo fi = {.sType = VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
    h->vk.CreateFence(h->device, &fi, NULL, &fence);
    int frames = 0;
    while (!atomic_load(&h->stop)) {
        ember_mutex_lock(&h->queue_mu);
        h->vk.QueueSubmit(h->queue, 0, NULL, fence);
        ember_mutex_unlock(&h->queue_mu);
        h->vk.WaitForFences(h->device, 1, &fence, VK_TRUE, UINT64_MAX);
        h->vk.ResetFences(h->device, 1, &fence);
        frames++;
    }
    h->vk.DestroyFence(h->device, fence, NULL);
    h->frames = frames;
}

/* ---- generating ------------------------------------------------------------------------ */

static uint32_t prompts[NREQ][120];

/* Serves NREQ requests with opts; with shrink_to, lowers the model's budget to it after
 * a few steps and raises it again later. Returns the engine's peak pool sizes in lo/hi. */
/* The budget in MiB that leaves engine e its pool's floor (one sequence of the context)
 * and less than a MiB more: everything else on the device plus floor blocks, rounded up. */
static uint32_t floor_budget(ember_model *m, ember_engine *e)
{
    ember_model_info info;
    ember_engine_stats st;
    ember_model_get_info(m, &info);
    ember_engine_get_stats(e, &st);
    uint64_t block = st.kv_bytes_per_token * st.kv_block_size;
    uint64_t others = info.device_bytes - st.kv_blocks_total * block;
    uint64_t floor = (info.ctx_len + st.kv_block_size - 1) / st.kv_block_size;
    return (uint32_t)((others + floor * block + (1u << 20) - 1) >> 20);
}

/* Serves the NREQ requests; with shrink, the budget drops to floor_budget at step 3 and
 * goes back to restore MiB at step 12 (*shrink_to gets the low budget). */
static void generate(ember_model *m, ef_result *res, uint32_t *shrink_to, uint32_t restore, uint32_t *lo, uint32_t *hi,
                     uint64_t *preemptions)
{
    ember_engine *e = NULL;
    ember_engine_opts o = {.max_seqs = 4};
    CHECKF(ember_engine_create(m, &o, &e) == EMBER_OK, "%s", ember_engine_error(e));
    if (e && shrink_to) *shrink_to = floor_budget(m, e);
    for (int i = 0; i < NREQ && e; i++) {
        ember_request_desc d = ef_desc(prompts[i], 60 + 20 * i, NGEN, &res[i]);
        CHECK(ember_submit(e, &d, NULL) == EMBER_OK);
    }
    ember_engine_stats st;
    uint32_t steps = 0;
    if (lo) *lo = UINT32_MAX, *hi = 0;
    while (e && ember_engine_step(e) == EMBER_OK) {
        if (++steps == 3 && shrink_to) CHECK(ember_model_set_memory_budget(m, *shrink_to) == EMBER_OK);
        if (steps == 12 && shrink_to) CHECK(ember_model_set_memory_budget(m, restore) == EMBER_OK);
        ember_engine_get_stats(e, &st);
        if (lo && st.kv_blocks_total < *lo) *lo = st.kv_blocks_total;
        if (hi && st.kv_blocks_total > *hi) *hi = st.kv_blocks_total;
    }
    if (e) {
        ember_engine_get_stats(e, &st);
        if (preemptions) *preemptions = st.preemptions;
    }
    ember_engine_destroy(e);
}

static void test_host_device(const char *path, const ef_result *ref, bool optional_features)
{
    host h;
    if (!host_create(&h, optional_features)) {
        CHECKF(false, "cannot make the application's device");
        host_destroy(&h);
        return;
    }
    ember_vulkan_device vd = host_desc(&h);
    /* With every optional feature, Ember finds its functions through the application's
     * vkGetInstanceProcAddr; without, it opens the system's loader itself. */
    if (optional_features) vd.get_instance_proc_addr = (void *)(uintptr_t)h.vk.GetInstanceProcAddr;
    ember_model_opts mo = {.vulkan = &vd};
    ember_model *m = NULL;
    CHECKF(ember_model_load(path, &mo, &m) == EMBER_OK, "%s", ember_model_error(m));
    ember_model_info info;
    ember_model_get_info(m, &info);
    CHECKF(info.device_index == 0, "the application's device has no device_index (got %d)", info.device_index);
    ember_thread t;
    bool started = ember_thread_start(&t, renderer_main, &h);
    CHECK(started);
    static ef_result res[NREQ];
    if (m) generate(m, res, 0, 0, NULL, NULL, NULL);
    atomic_store(&h.stop, true);
    if (started) ember_thread_join(&t);
    int same = ef_count_same(res, ref, NREQ, NGEN);
    printf("the application's device (%s optional features): %d/%d requests identical to Ember's own device; "
           "Ember took the queue lock %d times beside %d renderer submissions\n",
           optional_features ? "with" : "without", same, NREQ, atomic_load(&h.locks), h.frames);
    CHECK(same == NREQ && atomic_load(&h.locks) > 0);
    ember_model_free(m);
    /* The device is the application's again: it still works and is destroyed by it. */
    host_destroy(&h);
}

static void test_bad_queue(const char *path)
{
    host h;
    if (!host_create(&h, false)) {
        host_destroy(&h);
        return;
    }
    ember_vulkan_device vd = host_desc(&h);
    vd.queue_family = 99;
    ember_model_opts mo = {.vulkan = &vd};
    ember_model *m = NULL;
    ember_status s = ember_model_load(path, &mo, &m);
    printf("a queue family that does not exist: %s: %s\n", ember_status_name(s), ember_model_error(m));
    CHECK(s == EMBER_ERR_NO_DEVICE && strstr(ember_model_error(m), "queue family 99"));
    ember_model_free(m);
    host_destroy(&h);
}

/* A step ordered after the application's work: it waits for the application's timeline
 * value 1 (signalled from the host here), then signals 2. */
static void test_timeline(const char *path)
{
    host h;
    if (!host_create(&h, true)) {
        host_destroy(&h);
        return;
    }
    ember_vulkan_device vd = host_desc(&h);
    ember_model_opts mo = {.vulkan = &vd};
    ember_model *m = NULL;
    ember_engine *e = NULL;
    CHECKF(ember_model_load(path, &mo, &m) == EMBER_OK, "%s", ember_model_error(m));
    if (m) CHECKF(ember_engine_create(m, NULL, &e) == EMBER_OK, "%s", ember_engine_error(e));
    VkSemaphoreTypeCreateInfo tci = {.sType = VK_STRUCTURE_TYPE_SEMAPHORE_TYPE_CREATE_INFO,
                                     .semaphoreType = VK_SEMAPHORE_TYPE_TIMELINE};
    VkSemaphoreCreateInfo sci = {.sType = VK_STRUCTURE_TYPE_SEMAPHORE_CREATE_INFO, .pNext = &tci};
    VkSemaphore sem = VK_NULL_HANDLE;
    CHECK(h.vk.CreateSemaphore(h.device, &sci, NULL, &sem) == VK_SUCCESS);
    static ef_result r;
    ember_request_desc d = ef_desc(prompts[0], 30, 4, &r);
    ember_status waiting = EMBER_OK, after = EMBER_OK;
    uint64_t value = 0;
    if (e && sem) {
        CHECK(ember_submit(e, &d, NULL) == EMBER_OK);
        CHECKF(ember_engine_sync_next_step(e, sem, 1, 2) == EMBER_OK, "%s", ember_engine_error(e));
        CHECK(ember_engine_step_begin(e) == EMBER_OK);
        ember_sleep_ms(50);
        waiting = ember_engine_step_end(e, 0); /* the application has not signalled yet */
        VkSemaphoreSignalInfo si = {.sType = VK_STRUCTURE_TYPE_SEMAPHORE_SIGNAL_INFO, .semaphore = sem, .value = 1};
        CHECK(h.vk.SignalSemaphore(h.device, &si) == VK_SUCCESS);
        after = ember_engine_step_end(e, UINT64_MAX);
        /* The fence Ember waited on and the semaphore's signal complete together, but a
         * driver may make the value visible a moment later: wait for it (1 s at most). */
        uint64_t two = 2;
        VkSemaphoreWaitInfo wi = {.sType = VK_STRUCTURE_TYPE_SEMAPHORE_WAIT_INFO, .semaphoreCount = 1,
                                  .pSemaphores = &sem, .pValues = &two};
        h.vk.WaitSemaphores(h.device, &wi, 1000ull * 1000 * 1000);
        h.vk.GetSemaphoreCounterValue(h.device, sem, &value);
        while (ember_engine_step(e) == EMBER_OK) {}
    }
    printf("timeline semaphore: the step was %s before the application signalled 1, %s after, and left the value "
           "at %llu; the request %s\n", ember_status_name(waiting), ember_status_name(after),
           (unsigned long long)value, r.done == 1 && r.n == 4 ? "finished" : "did not finish");
    CHECK(waiting == EMBER_NOT_READY && after == EMBER_OK && value == 2 && r.done == 1 && r.n == 4);
    ember_engine_destroy(e);
    ember_model_free(m);
    if (sem) h.vk.DestroySemaphore(h.device, sem, NULL);
    host_destroy(&h);
}

static void test_budget(const char *path, const ef_result *ref)
{
    ember_model_opts tiny = {.memory_budget_mib = 1};
    ember_model *m = NULL;
    ember_status s = ember_model_load(path, &tiny, &m);
    printf("budget of 1 MiB: %s: %s\n", ember_status_name(s), ember_model_error(m));
    CHECK(s == EMBER_ERR_DEVICE_MEMORY && strstr(ember_model_error(m), "MiB"));
    ember_model_free(m);

    ember_model_opts big = {.memory_budget_mib = 1024};
    m = NULL;
    CHECKF(ember_model_load(path, &big, &m) == EMBER_OK, "%s", ember_model_error(m));
    if (!m) return;
    /* A budget that leaves this engine a little more than its floor, then all again. */
    static ef_result res[NREQ];
    uint32_t lo, hi, low_mib = 0;
    uint64_t preempted = 0;
    generate(m, res, &low_mib, 1024, &lo, &hi, &preempted);
    int same = ef_count_same(res, ref, NREQ, NGEN);
    printf("budget lowered from 1024 MiB to %u MiB and raised again: the pool went from %u blocks down to %u and "
           "back, %llu preemptions, %d/%d requests identical\n", low_mib, hi, lo,
           (unsigned long long)preempted, same, NREQ);
    CHECK(lo < hi && preempted > 0 && same == NREQ);
    CHECK(ember_model_set_memory_budget(m, 1) == EMBER_ERR_DEVICE_MEMORY);
    ember_model_free(m);
}

int main(void)
{
    char path[512];
    snprintf(path, sizeof path, "%s/host_device_model.gguf", tu_tmp_dir());
    /* Wide enough that 8 MiB hold fewer blocks than the engine would make. */
    tu_make_model(path, "--dim 256 --layers 4 --heads 8 --kv-heads 8 --ffn 512 --vocab 512 --ctx 256 --seed 9");
    ember_model_opts mo = {.enable_validation = tu_validation()};
    ember_model *own = ef_load(path, &mo);
    if (!own) return tu_skip("cannot load the test model on a Vulkan device");
    ember_model_info info; /* Ember's own device: its place in the list, which picks it again */
    ember_model_get_info(own, &info);
    static ember_device_info devs[8];
    size_t n_devs = 0;
    CHECK(ember_list_devices(devs, 8, &n_devs, NULL, 0) == EMBER_OK);
    CHECKF(info.device_index >= 1 && (size_t)info.device_index <= n_devs &&
               strcmp(devs[info.device_index - 1].name, info.device_name) == 0,
           "device_index %d names %s", info.device_index, info.device_name);
    ember_free_devices(devs, n_devs < 8 ? n_devs : 8);
    tu_rng rng = {3};
    for (int i = 0; i < NREQ; i++)
        for (int j = 0; j < 120; j++) prompts[i][j] = 3 + (uint32_t)(tu_next(&rng) % 500);
    static ef_result ref[NREQ];
    generate(own, ref, 0, 0, NULL, NULL, NULL);
    ember_model_free(own);
    test_host_device(path, ref, true);
    test_host_device(path, ref, false);
    test_bad_queue(path);
    test_timeline(path);
    test_budget(path, ref);
    return tu_finish("test_host_device");
}
