/* layer_old_device.c — a Vulkan layer for tests: every device claims Vulkan 1.1.
 *
 * Ember needs Vulkan 1.2. No device here lacks it, so to see what a user with an old
 * driver sees, this layer (VK_LAYER_EMBER_old_device, enabled with
 * VK_LAYER_PATH=<build>/tests/layers VK_INSTANCE_LAYERS=VK_LAYER_EMBER_old_device)
 * lowers the apiVersion that vkGetPhysicalDeviceProperties(2) reports to 1.1 and passes
 * everything else through. It only intercepts instance-level calls: a device is never
 * created through it, because Ember refuses the device first (and the test checks that). */
#include <pthread.h>
#include <string.h>
#include <vulkan/vk_layer.h>
#include <vulkan/vulkan.h>

#define MAX_INSTANCES 16

/* The next layer's functions for each instance, found by the loader's dispatch key
 * (the first pointer of any dispatchable handle: an instance and its physical devices
 * share one). A test layer may keep this table global; a process has few instances. */
typedef struct {
    void *key;
    PFN_vkGetInstanceProcAddr gipa;
    PFN_vkDestroyInstance destroy;
    PFN_vkGetPhysicalDeviceProperties props;
    PFN_vkGetPhysicalDeviceProperties2 props2;
} next_instance;

static next_instance table[MAX_INSTANCES];
static pthread_mutex_t table_mu = PTHREAD_MUTEX_INITIALIZER;

static void *key_of(const void *handle) { return *(void *const *)handle; }

static next_instance find(const void *handle)
{
    next_instance n = {0};
    pthread_mutex_lock(&table_mu);
    for (int i = 0; i < MAX_INSTANCES; i++)
        if (table[i].key == key_of(handle)) n = table[i];
    pthread_mutex_unlock(&table_mu);
    return n;
}

static VKAPI_ATTR void VKAPI_CALL old_props(VkPhysicalDevice pd, VkPhysicalDeviceProperties *p)
{
    find(pd).props(pd, p);
    p->apiVersion = VK_API_VERSION_1_1;
}

static VKAPI_ATTR void VKAPI_CALL old_props2(VkPhysicalDevice pd, VkPhysicalDeviceProperties2 *p)
{
    find(pd).props2(pd, p);
    p->properties.apiVersion = VK_API_VERSION_1_1;
}

static VKAPI_ATTR VkResult VKAPI_CALL old_create_instance(const VkInstanceCreateInfo *ci,
                                                          const VkAllocationCallbacks *alloc, VkInstance *out)
{
    VkLayerInstanceCreateInfo *link = (VkLayerInstanceCreateInfo *)ci->pNext;
    while (link && !(link->sType == VK_STRUCTURE_TYPE_LOADER_INSTANCE_CREATE_INFO && link->function == VK_LAYER_LINK_INFO))
        link = (VkLayerInstanceCreateInfo *)link->pNext;
    if (!link) return VK_ERROR_INITIALIZATION_FAILED;
    PFN_vkGetInstanceProcAddr gipa = link->u.pLayerInfo->pfnNextGetInstanceProcAddr;
    link->u.pLayerInfo = link->u.pLayerInfo->pNext; /* the next layer finds its own link */
    PFN_vkCreateInstance create = (PFN_vkCreateInstance)gipa(VK_NULL_HANDLE, "vkCreateInstance");
    VkResult r = create(ci, alloc, out);
    if (r != VK_SUCCESS) return r;
    next_instance n = {key_of(*out), gipa, (PFN_vkDestroyInstance)gipa(*out, "vkDestroyInstance"),
                       (PFN_vkGetPhysicalDeviceProperties)gipa(*out, "vkGetPhysicalDeviceProperties"),
                       (PFN_vkGetPhysicalDeviceProperties2)gipa(*out, "vkGetPhysicalDeviceProperties2")};
    pthread_mutex_lock(&table_mu);
    for (int i = 0; i < MAX_INSTANCES; i++)
        if (!table[i].key) {
            table[i] = n;
            break;
        }
    pthread_mutex_unlock(&table_mu);
    return VK_SUCCESS;
}

static VKAPI_ATTR void VKAPI_CALL old_destroy_instance(VkInstance inst, const VkAllocationCallbacks *alloc)
{
    next_instance n = find(inst);
    pthread_mutex_lock(&table_mu);
    for (int i = 0; i < MAX_INSTANCES; i++)
        if (table[i].key == key_of(inst)) table[i] = (next_instance){0};
    pthread_mutex_unlock(&table_mu);
    if (n.destroy) n.destroy(inst, alloc);
}

static VKAPI_ATTR PFN_vkVoidFunction VKAPI_CALL old_gipa(VkInstance inst, const char *name)
{
    if (!strcmp(name, "vkGetInstanceProcAddr")) return (PFN_vkVoidFunction)old_gipa;
    if (!strcmp(name, "vkCreateInstance")) return (PFN_vkVoidFunction)old_create_instance;
    if (!strcmp(name, "vkDestroyInstance")) return (PFN_vkVoidFunction)old_destroy_instance;
    if (!strcmp(name, "vkGetPhysicalDeviceProperties")) return (PFN_vkVoidFunction)old_props;
    if (!strcmp(name, "vkGetPhysicalDeviceProperties2") || !strcmp(name, "vkGetPhysicalDeviceProperties2KHR"))
        return (PFN_vkVoidFunction)old_props2;
    if (!inst) return NULL;
    next_instance n = find(inst);
    return n.gipa ? n.gipa(inst, name) : NULL;
}

VKAPI_ATTR VkResult VKAPI_CALL vkNegotiateLoaderLayerInterfaceVersion(VkNegotiateLayerInterface *v)
{
    if (v->loaderLayerInterfaceVersion < 2) return VK_ERROR_INITIALIZATION_FAILED;
    v->loaderLayerInterfaceVersion = 2;
    v->pfnGetInstanceProcAddr = old_gipa;
    v->pfnGetDeviceProcAddr = NULL;
    v->pfnGetPhysicalDeviceProcAddr = NULL;
    return VK_SUCCESS;
}
