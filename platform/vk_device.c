/* vk_device.c — Vulkan instance (with the validation layer on request), the choice of
 * physical device, and the logical device with one compute queue. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/alloc.h"
#include "vk_coopmat.h"
#include "vk_device.h"
#include "vk_internal.h"
#include "vk_result.h"
#include "vk_transfer.h"

/* ---- instance ----------------------------------------------------------------- */

static bool instance_has_layer(const ember_vk_fn *fn, const char *name)
{
    uint32_t n = 0;
    if (fn->EnumerateInstanceLayerProperties(&n, NULL) != VK_SUCCESS || n == 0) return false;
    VkLayerProperties *p = ember_calloc(n, sizeof *p);
    bool found = false;
    if (p && fn->EnumerateInstanceLayerProperties(&n, p) >= 0)
        for (uint32_t i = 0; i < n && !found; i++) found = strcmp(p[i].layerName, name) == 0;
    ember_free(p);
    return found;
}

static bool instance_has_extension(const ember_vk_fn *fn, const char *name)
{
    uint32_t n = 0;
    if (fn->EnumerateInstanceExtensionProperties(NULL, &n, NULL) != VK_SUCCESS || n == 0) return false;
    VkExtensionProperties *p = ember_calloc(n, sizeof *p);
    bool found = false;
    if (p && fn->EnumerateInstanceExtensionProperties(NULL, &n, p) >= 0)
        for (uint32_t i = 0; i < n && !found; i++) found = strcmp(p[i].extensionName, name) == 0;
    ember_free(p);
    return found;
}

static VKAPI_ATTR VkBool32 VKAPI_CALL on_debug_message(
    VkDebugUtilsMessageSeverityFlagBitsEXT severity, VkDebugUtilsMessageTypeFlagsEXT type,
    const VkDebugUtilsMessengerCallbackDataEXT *data, void *user)
{
    ember_vk *vk = user;
    if (!(severity & (VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT |
                      VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT)))
        return VK_FALSE;
    if (vk->n_validation++ == 0)
        snprintf(vk->first_validation, sizeof vk->first_validation, "%s",
                 data && data->pMessage ? data->pMessage : "(no text)");
    return VK_FALSE;
}

/* Creates the instance and loads its functions into fn. vk may be NULL (device listing):
 * then no messenger. */
static ember_status create_instance(ember_vk_fn *fn, ember_vk *vk, bool validation, VkInstance *out,
                                    VkDebugUtilsMessengerEXT *messenger, ember_err *err)
{
    const char *layers[1], *exts[2];
    uint32_t n_layers = 0, n_exts = 0;
    bool debug = validation && vk && instance_has_layer(fn, "VK_LAYER_KHRONOS_validation") &&
                 instance_has_extension(fn, VK_EXT_DEBUG_UTILS_EXTENSION_NAME);
    if (debug) {
        layers[n_layers++] = "VK_LAYER_KHRONOS_validation";
        exts[n_exts++] = VK_EXT_DEBUG_UTILS_EXTENSION_NAME;
    }
    /* MoltenVK and other non-conformant drivers are only listed with this flag. */
    VkInstanceCreateFlags flags = 0;
    if (instance_has_extension(fn, VK_KHR_PORTABILITY_ENUMERATION_EXTENSION_NAME)) {
        exts[n_exts++] = VK_KHR_PORTABILITY_ENUMERATION_EXTENSION_NAME;
        flags |= VK_INSTANCE_CREATE_ENUMERATE_PORTABILITY_BIT_KHR;
    }
    VkApplicationInfo app = {.sType = VK_STRUCTURE_TYPE_APPLICATION_INFO, .pApplicationName = "ember",
                             .pEngineName = "ember", .apiVersion = VK_API_VERSION_1_2};
    VkDebugUtilsMessengerCreateInfoEXT dbg = {
        .sType = VK_STRUCTURE_TYPE_DEBUG_UTILS_MESSENGER_CREATE_INFO_EXT,
        .messageSeverity = VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT |
                           VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT,
        .messageType = VK_DEBUG_UTILS_MESSAGE_TYPE_GENERAL_BIT_EXT |
                       VK_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT |
                       VK_DEBUG_UTILS_MESSAGE_TYPE_PERFORMANCE_BIT_EXT,
        .pfnUserCallback = on_debug_message, .pUserData = vk};
    VkInstanceCreateInfo ci = {.sType = VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO, .flags = flags,
                               .pApplicationInfo = &app, .enabledLayerCount = n_layers,
                               .ppEnabledLayerNames = layers, .enabledExtensionCount = n_exts,
                               .ppEnabledExtensionNames = exts, .pNext = debug ? &dbg : NULL};
    ember_status s = ember_vk_check(fn->CreateInstance(&ci, NULL, out), err, "vkCreateInstance");
    if (s != EMBER_OK) {
        if (s == EMBER_ERR_VULKAN) s = EMBER_ERR_NO_DEVICE;
        return ember_fail_ctx(err, s, "no Vulkan driver (install mesa-vulkan-drivers for the CPU driver)");
    }
    *messenger = VK_NULL_HANDLE;
    if ((s = ember_vk_fn_instance(fn, *out, err)) != EMBER_OK) return s;
    if (debug) {
        PFN_vkCreateDebugUtilsMessengerEXT create = (PFN_vkCreateDebugUtilsMessengerEXT)
            fn->GetInstanceProcAddr(*out, "vkCreateDebugUtilsMessengerEXT");
        if (create) create(*out, &dbg, NULL, messenger);
    }
    return EMBER_OK;
}

/* ---- physical device ------------------------------------------------------------ */

static int compute_queue_family(const ember_vk_fn *fn, VkPhysicalDevice phys)
{
    uint32_t n = 0;
    fn->GetPhysicalDeviceQueueFamilyProperties(phys, &n, NULL);
    VkQueueFamilyProperties q[64];
    if (n > 64) n = 64;
    fn->GetPhysicalDeviceQueueFamilyProperties(phys, &n, q);
    int best = -1;
    for (uint32_t i = 0; i < n; i++) {
        if (!(q[i].queueFlags & VK_QUEUE_COMPUTE_BIT)) continue;
        /* Prefer a family with timestamps, then a compute-only one. */
        if (best < 0 || (q[i].timestampValidBits && !q[best].timestampValidBits)) best = (int)i;
    }
    return best;
}

static int type_rank(VkPhysicalDeviceType t)
{
    switch (t) {
    case VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU: return 4;
    case VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU: return 3;
    case VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU: return 2;
    case VK_PHYSICAL_DEVICE_TYPE_CPU: return 1;
    default: return 0;
    }
}

/* Whether Ember can run on the device: Vulkan 1.2 and a compute queue. If not, why
 * (naming the device by the number `ember info` prints) goes into why. */
static bool device_usable(const ember_vk_fn *fn, VkPhysicalDevice phys, const ember_vk_caps *c, uint32_t i, char *why,
                          size_t cap)
{
    if (c->api_version < VK_API_VERSION_1_2) {
        snprintf(why, cap, "device %u (%s) has Vulkan %u.%u; Ember needs 1.2 (a newer driver may provide it)", i,
                 c->device_name, VK_API_VERSION_MAJOR(c->api_version), VK_API_VERSION_MINOR(c->api_version));
        return false;
    }
    if (compute_queue_family(fn, phys) < 0) {
        snprintf(why, cap, "device %u (%s) has no compute queue", i, c->device_name);
        return false;
    }
    return true;
}

static ember_status pick_device(ember_vk *vk, int index, ember_err *err)
{
    uint32_t n = 0;
    VkPhysicalDevice devs[EMBER_VK_MAX_DEVICES];
    ember_status s = ember_vk_check(vk->fn.EnumeratePhysicalDevices(vk->instance, &n, NULL), err,
                                    "vkEnumeratePhysicalDevices");
    if (s != EMBER_OK) return s;
    if (n > EMBER_VK_MAX_DEVICES) n = EMBER_VK_MAX_DEVICES;
    if (vk->fn.EnumeratePhysicalDevices(vk->instance, &n, devs) < 0 || n == 0)
        return ember_fail(err, EMBER_ERR_NO_DEVICE, "no Vulkan device found");
    if (index > 0 && (uint32_t)index > n)
        return ember_fail(err, EMBER_ERR_NO_DEVICE, "device %d requested, %u present (counted from 0)", index - 1, n);

    int best = -1, best_rank = -1;
    char why[512] = "";
    for (uint32_t i = 0; i < n; i++) {
        if (index > 0 && i != (uint32_t)index - 1) continue;
        ember_vk_caps c;
        ember_vk_query_caps(&vk->fn, vk->instance, devs[i], &c);
        if (!device_usable(&vk->fn, devs[i], &c, i, why, sizeof why)) {
            if (index > 0) return ember_fail(err, EMBER_ERR_NO_DEVICE, "%s", why);
            continue;
        }
        if (type_rank(c.device_type) > best_rank) {
            best = (int)i;
            best_rank = type_rank(c.device_type);
        }
    }
    /* Name what the last refused device lacked: with one device (the usual case) that is
     * the whole story, and `ember info` lists the others. */
    if (best < 0)
        return ember_fail(err, EMBER_ERR_NO_DEVICE, "no usable Vulkan device: %s (ember info lists the devices)", why);
    vk->phys = devs[best];
    vk->queue_family = (uint32_t)compute_queue_family(&vk->fn, vk->phys);
    ember_vk_query_caps(&vk->fn, vk->instance, vk->phys, &vk->caps);
    vk->caps.list_index = best;
    vk->fn.GetPhysicalDeviceMemoryProperties(vk->phys, &vk->mem_props);
    return EMBER_OK;
}

/* ---- logical device ---------------------------------------------------------------- */

/* Whether the physical device offers extension name. */
static bool device_has_extension(const ember_vk_fn *fn, VkPhysicalDevice phys, const char *name)
{
    uint32_t n = 0;
    if (fn->EnumerateDeviceExtensionProperties(phys, NULL, &n, NULL) != VK_SUCCESS || n == 0) return false;
    VkExtensionProperties *p = ember_calloc(n, sizeof *p);
    bool found = false;
    if (p && fn->EnumerateDeviceExtensionProperties(phys, NULL, &n, p) >= 0)
        for (uint32_t i = 0; i < n && !found; i++) found = strcmp(p[i].extensionName, name) == 0;
    ember_free(p);
    return found;
}

static ember_status create_device(ember_vk *vk, ember_err *err)
{
    const ember_vk_caps *c = &vk->caps;
    /* Enable every optional feature the shaders may use, where present. */
    VkPhysicalDeviceVulkan12Features f12 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES,
                                            .shaderFloat16 = c->fp16_arith, .shaderInt8 = c->int8_arith,
                                            .storageBuffer8BitAccess = c->storage8,
                                            .timelineSemaphore = c->timeline_semaphore};
    VkPhysicalDeviceVulkan11Features f11 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_FEATURES,
                                            .storageBuffer16BitAccess = c->storage16, .pNext = &f12};
    /* Subgroup size control, to pin pipelines to the size their tiles were planned for. */
    VkPhysicalDeviceSubgroupSizeControlFeaturesEXT sc = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_SIZE_CONTROL_FEATURES_EXT,
        .subgroupSizeControl = VK_TRUE, .computeFullSubgroups = VK_TRUE};
    if (c->subgroup_pin) f12.pNext = &sc;
    /* Integer dot products (linear.comp's INT_DOT Q8_0 variant). */
    VkPhysicalDeviceShaderIntegerDotProductFeatures dot = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_INTEGER_DOT_PRODUCT_FEATURES,
        .shaderIntegerDotProduct = VK_TRUE};
    if (c->int_dot) dot.pNext = f12.pNext, f12.pNext = &dot;
    /* Cooperative matrices (linear_mm.comp's COOPMAT variant) and the memory model their
     * SPIR-V declares. */
    VkPhysicalDeviceCooperativeMatrixFeaturesNV cm = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_FEATURES_NV, .cooperativeMatrix = VK_TRUE};
    if (c->coop_nv) cm.pNext = f12.pNext, f12.pNext = &cm, f12.vulkanMemoryModel = VK_TRUE;
    VkPhysicalDeviceCooperativeMatrixFeaturesKHR ck = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_FEATURES_KHR, .cooperativeMatrix = VK_TRUE};
    if (c->coop_khr) ck.pNext = f12.pNext, f12.pNext = &ck, f12.vulkanMemoryModel = VK_TRUE;
    VkPhysicalDeviceFeatures2 f = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2, .pNext = &f11};
    float prio = 1.0f;
    VkDeviceQueueCreateInfo q = {.sType = VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO,
                                 .queueFamilyIndex = vk->queue_family, .queueCount = 1,
                                 .pQueuePriorities = &prio};
    /* A non-conformant implementation (MoltenVK) that offers VK_KHR_portability_subset
     * must have it enabled (the spec requires it). */
    const char *exts[6];
    uint32_t n_exts = 0;
    if (device_has_extension(&vk->fn, vk->phys, "VK_KHR_portability_subset")) exts[n_exts++] = "VK_KHR_portability_subset";
    if (c->subgroup_pin) exts[n_exts++] = VK_EXT_SUBGROUP_SIZE_CONTROL_EXTENSION_NAME;
    if (c->int_dot) exts[n_exts++] = VK_KHR_SHADER_INTEGER_DOT_PRODUCT_EXTENSION_NAME;
    if (c->coop_nv) exts[n_exts++] = VK_NV_COOPERATIVE_MATRIX_EXTENSION_NAME;
    if (c->coop_khr) exts[n_exts++] = VK_KHR_COOPERATIVE_MATRIX_EXTENSION_NAME;
    VkDeviceCreateInfo ci = {.sType = VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO, .pNext = &f,
                             .queueCreateInfoCount = 1, .pQueueCreateInfos = &q,
                             .enabledExtensionCount = n_exts, .ppEnabledExtensionNames = exts};
    ember_status s = ember_vk_check(vk->fn.CreateDevice(vk->phys, &ci, NULL, &vk->device), err, "vkCreateDevice");
    if (s == EMBER_OK) s = ember_vk_fn_device(&vk->fn, vk->device, err);
    if (s != EMBER_OK) return s;
    vk->fn.GetDeviceQueue(vk->device, vk->queue_family, 0, &vk->queue);
    return EMBER_OK;
}

/* ---- the application's device --------------------------------------------------------- */

/* Clears the optional features the application did not enable on its device: Ember may
 * only use what vkCreateDevice was given. Vulkan offers no query for that, so the
 * application passes its VkPhysicalDeviceFeatures2 chain. */
static void mask_enabled_features(ember_vk_caps *c, const void *chain)
{
    bool fp16 = false, int8 = false, s8 = false, s16 = false, timeline = false, pin = false, idot = false;
    bool coop = false, coop_khr = false, memory_model = false;
    for (const VkBaseInStructure *p = chain; p; p = p->pNext) {
        switch ((uint32_t)p->sType) { /* (uint32_t): vk_coopmat.h's values are not in old headers' enum */
        case VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_FEATURES:
            s16 |= ((const VkPhysicalDeviceVulkan11Features *)p)->storageBuffer16BitAccess;
            break;
        case VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES: {
            const VkPhysicalDeviceVulkan12Features *f = (const void *)p;
            fp16 |= f->shaderFloat16;
            int8 |= f->shaderInt8;
            s8 |= f->storageBuffer8BitAccess;
            timeline |= f->timelineSemaphore;
            memory_model |= f->vulkanMemoryModel;
            break;
        }
        case VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_MEMORY_MODEL_FEATURES:
            memory_model |= ((const VkPhysicalDeviceVulkanMemoryModelFeatures *)p)->vulkanMemoryModel;
            break;
        case VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_FEATURES_NV: /* and the extension */
            coop |= ((const VkPhysicalDeviceCooperativeMatrixFeaturesNV *)p)->cooperativeMatrix;
            break;
        case VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_FEATURES_KHR: /* and the extension */
            coop_khr |= ((const VkPhysicalDeviceCooperativeMatrixFeaturesKHR *)p)->cooperativeMatrix;
            break;
        case VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_SIZE_CONTROL_FEATURES_EXT: {
            const VkPhysicalDeviceSubgroupSizeControlFeaturesEXT *f = (const void *)p;
            pin |= f->subgroupSizeControl && f->computeFullSubgroups; /* and the extension enabled */
            break;
        }
        case VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_TIMELINE_SEMAPHORE_FEATURES:
            timeline |= ((const VkPhysicalDeviceTimelineSemaphoreFeatures *)p)->timelineSemaphore;
            break;
        case VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_INTEGER_DOT_PRODUCT_FEATURES: /* and the extension */
            idot |= ((const VkPhysicalDeviceShaderIntegerDotProductFeatures *)p)->shaderIntegerDotProduct;
            break;
        case VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_3_FEATURES:
            idot |= ((const VkPhysicalDeviceVulkan13Features *)p)->shaderIntegerDotProduct;
            break;
        case VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_16BIT_STORAGE_FEATURES:
            s16 |= ((const VkPhysicalDevice16BitStorageFeatures *)p)->storageBuffer16BitAccess;
            break;
        case VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_8BIT_STORAGE_FEATURES:
            s8 |= ((const VkPhysicalDevice8BitStorageFeatures *)p)->storageBuffer8BitAccess;
            break;
        case VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_FLOAT16_INT8_FEATURES: {
            const VkPhysicalDeviceShaderFloat16Int8Features *f = (const void *)p;
            fp16 |= f->shaderFloat16;
            int8 |= f->shaderInt8;
            break;
        }
        default: break;
        }
    }
    c->fp16_arith &= fp16;
    c->int8_arith &= int8;
    c->storage8 &= s8;
    c->storage16 &= s16;
    c->timeline_semaphore &= timeline;
    c->subgroup_pin &= pin;
    if (!pin) c->subgroup_min = c->subgroup_max = 0;
    c->int_dot &= idot;
    c->int_dot_accel &= idot;
    c->coop_nv &= coop && memory_model && fp16;
    c->coop_khr &= coop_khr && memory_model && fp16;
}

static ember_status adopt_host_device(ember_vk *vk, const ember_vulkan_device *h, ember_err *err)
{
    if (!h->instance || !h->physical_device || !h->device)
        return ember_fail(err, EMBER_ERR_INVALID_ARG, "the application's Vulkan device needs instance, "
                                                       "physical_device and device");
    vk->borrowed = true;
    vk->instance = h->instance;
    vk->phys = h->physical_device;
    vk->device = h->device;
    /* the application's loader (and layers) when it hands its vkGetInstanceProcAddr over */
    ember_status s = ember_vk_fn_open(&vk->fn, (PFN_vkGetInstanceProcAddr)h->get_instance_proc_addr, err);
    if (s == EMBER_OK) s = ember_vk_fn_instance(&vk->fn, vk->instance, err);
    if (s == EMBER_OK) s = ember_vk_fn_device(&vk->fn, vk->device, err);
    if (s != EMBER_OK) return s;
    ember_vk_query_caps(&vk->fn, vk->instance, vk->phys, &vk->caps);
    uint32_t api = h->api_version ? h->api_version : VK_API_VERSION_1_2;
    if (api < VK_API_VERSION_1_2 || vk->caps.api_version < VK_API_VERSION_1_2)
        return ember_fail(err, EMBER_ERR_NO_DEVICE, "the application's Vulkan device (%s) lacks Vulkan 1.2: "
                          "device %u.%u, instance %u.%u", vk->caps.device_name,
                          VK_API_VERSION_MAJOR(vk->caps.api_version), VK_API_VERSION_MINOR(vk->caps.api_version),
                          VK_API_VERSION_MAJOR(api), VK_API_VERSION_MINOR(api));
    uint32_t n = 0;
    VkQueueFamilyProperties q[64];
    vk->fn.GetPhysicalDeviceQueueFamilyProperties(vk->phys, &n, NULL);
    if (n > 64) n = 64;
    vk->fn.GetPhysicalDeviceQueueFamilyProperties(vk->phys, &n, q);
    if (h->queue_family >= n || !(q[h->queue_family].queueFlags & VK_QUEUE_COMPUTE_BIT))
        return ember_fail(err, EMBER_ERR_NO_DEVICE, "queue family %u of %s has no compute support",
                          h->queue_family, vk->caps.device_name);
    if (h->queue_index >= q[h->queue_family].queueCount)
        return ember_fail(err, EMBER_ERR_INVALID_ARG, "queue %u of family %u does not exist (it has %u)",
                          h->queue_index, h->queue_family, q[h->queue_family].queueCount);
    if (!q[h->queue_family].timestampValidBits) vk->caps.timestamp_period_ns = 0;
    mask_enabled_features(&vk->caps, h->enabled_features);
    vk->queue_family = h->queue_family;
    vk->fn.GetDeviceQueue(vk->device, vk->queue_family, h->queue_index, &vk->queue);
    vk->fn.GetPhysicalDeviceMemoryProperties(vk->phys, &vk->mem_props);
    vk->lock_queue = h->lock_queue;
    vk->unlock_queue = h->unlock_queue;
    vk->queue_user = h->queue_user;
    return EMBER_OK;
}

ember_status ember_vk_create(const ember_vk_opts *opts, ember_vk **out, ember_err *err)
{
    ember_vk_opts o = opts ? *opts : (ember_vk_opts){0};
    *out = NULL;
    ember_vk *vk = ember_calloc(1, sizeof *vk);
    if (!vk) return ember_fail(err, EMBER_ERR_OUT_OF_MEMORY, "out of memory");
    ember_mutex_init(&vk->queue_mu);
    ember_mutex_init(&vk->xfer_mu);
    ember_status s;
    if (o.host) {
        s = adopt_host_device(vk, o.host, err);
    } else {
        s = ember_vk_fn_open(&vk->fn, NULL, err);
        if (s == EMBER_OK) s = create_instance(&vk->fn, vk, o.validation, &vk->instance, &vk->messenger, err);
        if (s == EMBER_OK) s = pick_device(vk, o.device_index, err);
        if (s == EMBER_OK) s = create_device(vk, err);
    }
    if (s != EMBER_OK) {
        ember_vk_destroy(vk);
        return s;
    }
    VkPhysicalDeviceProperties props;
    vk->fn.GetPhysicalDeviceProperties(vk->phys, &props);
    vk->atom = props.limits.nonCoherentAtomSize ? props.limits.nonCoherentAtomSize : 1;
    vk->discrete = o.discrete_memory;
    *out = vk;
    return EMBER_OK;
}

void ember_vk_destroy(ember_vk *vk)
{
    if (!vk) return;
    if (vk->borrowed) { /* Ember's own objects were waited for and freed by their owners */
        ember_vk_transfer_free(vk->xfer);
    } else if (vk->device) {
        vk->fn.DeviceWaitIdle(vk->device);
        ember_vk_transfer_free(vk->xfer);
        vk->fn.DestroyDevice(vk->device, NULL);
    }
    if (vk->messenger) {
        PFN_vkDestroyDebugUtilsMessengerEXT destroy = (PFN_vkDestroyDebugUtilsMessengerEXT)
            vk->fn.GetInstanceProcAddr(vk->instance, "vkDestroyDebugUtilsMessengerEXT");
        if (destroy) destroy(vk->instance, vk->messenger, NULL);
    }
    if (vk->instance && !vk->borrowed) vk->fn.DestroyInstance(vk->instance, NULL);
    ember_vk_fn_close(&vk->fn);
    ember_mutex_destroy(&vk->queue_mu);
    ember_mutex_destroy(&vk->xfer_mu);
    ember_free(vk);
}

const ember_vk_caps *ember_vk_get_caps(const ember_vk *vk) { return &vk->caps; }

uint32_t ember_vk_validation_count(const ember_vk *vk, char *first, size_t cap)
{
    if (first && cap) snprintf(first, cap, "%s", vk->first_validation);
    return vk->n_validation;
}

ember_status ember_vk_list_devices(ember_vk_caps *out, uint32_t cap, uint32_t *n, ember_err *err)
{
    VkInstance inst = VK_NULL_HANDLE;
    VkDebugUtilsMessengerEXT none;
    ember_vk_fn fn;
    *n = 0;
    ember_status s = ember_vk_fn_open(&fn, NULL, err);
    if (s == EMBER_OK) s = create_instance(&fn, NULL, false, &inst, &none, err);
    uint32_t count = 0;
    VkPhysicalDevice devs[EMBER_VK_MAX_DEVICES];
    if (s == EMBER_OK) fn.EnumeratePhysicalDevices(inst, &count, NULL);
    if (count > EMBER_VK_MAX_DEVICES) count = EMBER_VK_MAX_DEVICES;
    if (count && fn.EnumeratePhysicalDevices(inst, &count, devs) < 0) count = 0;
    for (uint32_t i = 0; i < count && i < cap; i++) ember_vk_query_caps(&fn, inst, devs[i], &out[i]);
    *n = count < cap ? count : cap;
    if (inst && fn.DestroyInstance) fn.DestroyInstance(inst, NULL);
    if (fn.GetInstanceProcAddr) ember_vk_fn_close(&fn);
    return s;
}
