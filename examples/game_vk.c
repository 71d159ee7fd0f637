/* game_vk.c — the Vulkan side of examples/game_loop.c, set up the way a game sets it up:
 * its own instance (the extensions SDL asks for), a device with one queue that can draw,
 * present and compute, and a FIFO swapchain. A frame is only a clear to a colour: the
 * point is the frame's timing, not its picture.
 *
 * The one queue is shared with Ember, so every call that Vulkan says needs the queue
 * externally synchronised (submit, present, wait idle) runs under queue_mu, the mutex
 * Ember takes through game_vk_lock_queue / game_vk_unlock_queue. */
#include "game_vk.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <SDL_vulkan.h>

#define FRAMES_IN_FLIGHT 2 /* the CPU records frame N+1 while the device runs frame N */
#define MAX_IMAGES 8
#define MAX_EXTENSIONS 16

struct frame {
    VkCommandBuffer cmd;
    VkFence done;          /* the frame's submission finished: cmd may be recorded again */
    VkSemaphore acquired;  /* the swapchain image may be written */
};

struct game_vk {
    SDL_Window *window;
    VkInstance instance;
    VkDebugUtilsMessengerEXT messenger;
    atomic_uint n_messages; /* the messenger may be called from Ember's thread too */
    char first_message[1024];
    VkSurfaceKHR surface;
    VkPhysicalDevice phys;
    char device_name[VK_MAX_PHYSICAL_DEVICE_NAME_SIZE];
    uint32_t family;
    VkDevice device;
    VkQueue queue;
    pthread_mutex_t queue_mu;
    /* The feature chain given to vkCreateDevice; kept alive for Ember to read. */
    VkPhysicalDeviceFeatures2 f2;
    VkPhysicalDeviceVulkan11Features f11;
    VkPhysicalDeviceVulkan12Features f12;
    VkSwapchainKHR swapchain;
    VkFormat format;
    VkExtent2D extent;
    uint32_t n_images;
    VkImage images[MAX_IMAGES];
    VkSemaphore rendered[MAX_IMAGES]; /* per image: present waits for its clear */
    VkCommandPool pool;
    struct frame frames[FRAMES_IN_FLIGHT];
    uint32_t frame;
};

static bool vk_ok(VkResult r, const char *what)
{
    if (r >= 0) return true;
    fprintf(stderr, "game_loop: %s failed (VkResult %d)\n", what, (int)r);
    return false;
}

/* ---- instance ------------------------------------------------------------------- */

static bool has_layer(const char *name)
{
    uint32_t n = 0;
    vkEnumerateInstanceLayerProperties(&n, NULL);
    VkLayerProperties *p = calloc(n ? n : 1, sizeof *p);
    bool found = false;
    if (p && vkEnumerateInstanceLayerProperties(&n, p) >= 0)
        for (uint32_t i = 0; i < n && !found; i++) found = strcmp(p[i].layerName, name) == 0;
    free(p);
    return found;
}

static bool has_instance_extension(const char *name)
{
    uint32_t n = 0;
    vkEnumerateInstanceExtensionProperties(NULL, &n, NULL);
    VkExtensionProperties *p = calloc(n ? n : 1, sizeof *p);
    bool found = false;
    if (p && vkEnumerateInstanceExtensionProperties(NULL, &n, p) >= 0)
        for (uint32_t i = 0; i < n && !found; i++) found = strcmp(p[i].extensionName, name) == 0;
    free(p);
    return found;
}

static VKAPI_ATTR VkBool32 VKAPI_CALL on_validation(VkDebugUtilsMessageSeverityFlagBitsEXT severity,
                                                    VkDebugUtilsMessageTypeFlagsEXT type,
                                                    const VkDebugUtilsMessengerCallbackDataEXT *data,
                                                    void *user)
{
    (void)severity, (void)type; /* the messenger was created for warnings and errors only */
    game_vk *g = user;
    if (atomic_fetch_add(&g->n_messages, 1) == 0)
        snprintf(g->first_message, sizeof g->first_message, "%s",
                 data && data->pMessage ? data->pMessage : "(no text)");
    return VK_FALSE;
}

static VkDebugUtilsMessengerCreateInfoEXT messenger_info(game_vk *g)
{
    /* Warnings count as much as errors: the test wants the layer silent. */
    return (VkDebugUtilsMessengerCreateInfoEXT){
        .sType = VK_STRUCTURE_TYPE_DEBUG_UTILS_MESSENGER_CREATE_INFO_EXT,
        .messageSeverity = VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT |
                           VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT,
        .messageType = VK_DEBUG_UTILS_MESSAGE_TYPE_GENERAL_BIT_EXT | VK_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT |
                       VK_DEBUG_UTILS_MESSAGE_TYPE_PERFORMANCE_BIT_EXT,
        .pfnUserCallback = on_validation,
        .pUserData = g};
}

static bool create_instance(game_vk *g, int validation)
{
    const char *exts[MAX_EXTENSIONS];
    unsigned n = MAX_EXTENSIONS - 2;
    if (!SDL_Vulkan_GetInstanceExtensions(g->window, &n, exts)) {
        fprintf(stderr, "game_loop: SDL_Vulkan_GetInstanceExtensions: %s\n", SDL_GetError());
        return false;
    }
    const char *layer = "VK_LAYER_KHRONOS_validation";
    if (validation && !has_layer(layer)) {
        fprintf(stderr, "game_loop: --validation: %s is not installed\n", layer);
        return false;
    }
    if (validation) exts[n++] = VK_EXT_DEBUG_UTILS_EXTENSION_NAME;
    /* MoltenVK and other non-conformant drivers are only listed with this flag. */
    VkInstanceCreateFlags flags = 0;
    if (has_instance_extension(VK_KHR_PORTABILITY_ENUMERATION_EXTENSION_NAME)) {
        exts[n++] = VK_KHR_PORTABILITY_ENUMERATION_EXTENSION_NAME;
        flags |= VK_INSTANCE_CREATE_ENUMERATE_PORTABILITY_BIT_KHR;
    }
    VkApplicationInfo app = {.sType = VK_STRUCTURE_TYPE_APPLICATION_INFO, .pApplicationName = "game_loop",
                             .apiVersion = VK_API_VERSION_1_2}; /* what Ember needs */
    /* Chained into the create info too, so that instance creation itself is checked. */
    VkDebugUtilsMessengerCreateInfoEXT dbg = messenger_info(g);
    VkInstanceCreateInfo ci = {.sType = VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO, .pNext = validation ? &dbg : NULL,
                               .flags = flags, .pApplicationInfo = &app,
                               .enabledLayerCount = validation ? 1 : 0, .ppEnabledLayerNames = &layer,
                               .enabledExtensionCount = n, .ppEnabledExtensionNames = exts};
    if (!vk_ok(vkCreateInstance(&ci, NULL, &g->instance), "vkCreateInstance")) return false;
    if (!validation) return true;
    PFN_vkCreateDebugUtilsMessengerEXT create =
        (PFN_vkCreateDebugUtilsMessengerEXT)vkGetInstanceProcAddr(g->instance, "vkCreateDebugUtilsMessengerEXT");
    return create && vk_ok(create(g->instance, &dbg, NULL, &g->messenger), "vkCreateDebugUtilsMessengerEXT");
}

/* ---- physical device --------------------------------------------------------------- */

static bool has_device_extension(VkPhysicalDevice phys, const char *name)
{
    uint32_t n = 0;
    vkEnumerateDeviceExtensionProperties(phys, NULL, &n, NULL);
    VkExtensionProperties *p = calloc(n ? n : 1, sizeof *p);
    bool found = false;
    if (p && vkEnumerateDeviceExtensionProperties(phys, NULL, &n, p) >= 0)
        for (uint32_t i = 0; i < n && !found; i++) found = strcmp(p[i].extensionName, name) == 0;
    free(p);
    return found;
}

/* A family that draws, computes (for Ember) and presents to our surface; -1 if none. */
static int queue_family(VkPhysicalDevice phys, VkSurfaceKHR surface)
{
    VkQueueFamilyProperties q[32];
    uint32_t n = 32;
    vkGetPhysicalDeviceQueueFamilyProperties(phys, &n, q);
    const VkQueueFlags need = VK_QUEUE_GRAPHICS_BIT | VK_QUEUE_COMPUTE_BIT;
    for (uint32_t i = 0; i < n; i++) {
        VkBool32 present = VK_FALSE;
        vkGetPhysicalDeviceSurfaceSupportKHR(phys, i, surface, &present);
        if ((q[i].queueFlags & need) == need && present) return (int)i;
    }
    return -1;
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

/* The best-ranked Vulkan 1.2 device that can present to the window. */
static bool pick_device(game_vk *g)
{
    VkPhysicalDevice devs[16];
    uint32_t n = 16;
    if (!vk_ok(vkEnumeratePhysicalDevices(g->instance, &n, devs), "vkEnumeratePhysicalDevices")) return false;
    int best_rank = -1;
    for (uint32_t i = 0; i < n; i++) {
        VkPhysicalDeviceProperties p;
        vkGetPhysicalDeviceProperties(devs[i], &p);
        int family = queue_family(devs[i], g->surface);
        if (p.apiVersion < VK_API_VERSION_1_2 || family < 0 ||
            !has_device_extension(devs[i], VK_KHR_SWAPCHAIN_EXTENSION_NAME) || type_rank(p.deviceType) <= best_rank)
            continue;
        best_rank = type_rank(p.deviceType);
        g->phys = devs[i];
        g->family = (uint32_t)family;
        snprintf(g->device_name, sizeof g->device_name, "%s", p.deviceName);
    }
    if (best_rank < 0) fprintf(stderr, "game_loop: no Vulkan 1.2 device can draw, compute and present here\n");
    return best_rank >= 0;
}

/* ---- device --------------------------------------------------------------------------- */

/* Enables, where supported, the optional features Ember's shaders can use: Ember reads
 * this chain and picks its shader variants from it, so what is not enabled here it does
 * not use. timelineSemaphore is what a game's own frame sync often wants; Ember waits on
 * fences and does not need it. */
static void choose_features(game_vk *g)
{
    VkPhysicalDeviceVulkan12Features s12 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES};
    VkPhysicalDeviceVulkan11Features s11 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_FEATURES,
                                            .pNext = &s12};
    VkPhysicalDeviceFeatures2 s2 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2, .pNext = &s11};
    vkGetPhysicalDeviceFeatures2(g->phys, &s2);
    g->f12 = (VkPhysicalDeviceVulkan12Features){
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES,
        .storageBuffer8BitAccess = s12.storageBuffer8BitAccess,
        .shaderFloat16 = s12.shaderFloat16,
        .shaderInt8 = s12.shaderInt8,
        .timelineSemaphore = s12.timelineSemaphore};
    g->f11 = (VkPhysicalDeviceVulkan11Features){.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_FEATURES,
                                                .pNext = &g->f12,
                                                .storageBuffer16BitAccess = s11.storageBuffer16BitAccess};
    g->f2 = (VkPhysicalDeviceFeatures2){.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2, .pNext = &g->f11};
}

static bool create_device(game_vk *g)
{
    choose_features(g);
    const char *exts[2] = {VK_KHR_SWAPCHAIN_EXTENSION_NAME};
    uint32_t n_exts = 1;
    /* The portability spec: a device that lists this extension must have it enabled. */
    if (has_device_extension(g->phys, "VK_KHR_portability_subset")) exts[n_exts++] = "VK_KHR_portability_subset";
    float prio = 1.0f;
    VkDeviceQueueCreateInfo q = {.sType = VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO,
                                 .queueFamilyIndex = g->family, .queueCount = 1, .pQueuePriorities = &prio};
    VkDeviceCreateInfo ci = {.sType = VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO, .pNext = &g->f2,
                             .queueCreateInfoCount = 1, .pQueueCreateInfos = &q,
                             .enabledExtensionCount = n_exts, .ppEnabledExtensionNames = exts};
    if (!vk_ok(vkCreateDevice(g->phys, &ci, NULL, &g->device), "vkCreateDevice")) return false;
    vkGetDeviceQueue(g->device, g->family, 0, &g->queue);
    return true;
}

static bool create_frames(game_vk *g)
{
    VkCommandPoolCreateInfo pci = {.sType = VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO,
                                   .flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT,
                                   .queueFamilyIndex = g->family};
    if (!vk_ok(vkCreateCommandPool(g->device, &pci, NULL, &g->pool), "vkCreateCommandPool")) return false;
    for (int i = 0; i < FRAMES_IN_FLIGHT; i++) {
        struct frame *f = &g->frames[i];
        VkCommandBufferAllocateInfo ai = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO,
                                          .commandPool = g->pool, .level = VK_COMMAND_BUFFER_LEVEL_PRIMARY,
                                          .commandBufferCount = 1};
        /* Signalled, so that the first wait on each frame returns at once. */
        VkFenceCreateInfo fci = {.sType = VK_STRUCTURE_TYPE_FENCE_CREATE_INFO, .flags = VK_FENCE_CREATE_SIGNALED_BIT};
        VkSemaphoreCreateInfo sci = {.sType = VK_STRUCTURE_TYPE_SEMAPHORE_CREATE_INFO};
        if (!vk_ok(vkAllocateCommandBuffers(g->device, &ai, &f->cmd), "vkAllocateCommandBuffers") ||
            !vk_ok(vkCreateFence(g->device, &fci, NULL, &f->done), "vkCreateFence") ||
            !vk_ok(vkCreateSemaphore(g->device, &sci, NULL, &f->acquired), "vkCreateSemaphore"))
            return false;
    }
    return true;
}

/* ---- swapchain ---------------------------------------------------------------------------- */

static VkSurfaceFormatKHR pick_format(game_vk *g)
{
    VkSurfaceFormatKHR f[64];
    uint32_t n = 64;
    vkGetPhysicalDeviceSurfaceFormatsKHR(g->phys, g->surface, &n, f);
    for (uint32_t i = 0; i < n; i++)
        if (f[i].format == VK_FORMAT_B8G8R8A8_UNORM || f[i].format == VK_FORMAT_R8G8B8A8_UNORM) return f[i];
    return f[0]; /* any format can be cleared; the colour is only a heartbeat */
}

static VkExtent2D pick_extent(game_vk *g, const VkSurfaceCapabilitiesKHR *caps)
{
    if (caps->currentExtent.width != UINT32_MAX) return caps->currentExtent;
    int w, h;
    SDL_Vulkan_GetDrawableSize(g->window, &w, &h);
    VkExtent2D e = {(uint32_t)w, (uint32_t)h};
    if (e.width < caps->minImageExtent.width) e.width = caps->minImageExtent.width;
    if (e.width > caps->maxImageExtent.width) e.width = caps->maxImageExtent.width;
    if (e.height < caps->minImageExtent.height) e.height = caps->minImageExtent.height;
    if (e.height > caps->maxImageExtent.height) e.height = caps->maxImageExtent.height;
    return e;
}

static bool create_swapchain(game_vk *g)
{
    VkSurfaceCapabilitiesKHR caps;
    if (!vk_ok(vkGetPhysicalDeviceSurfaceCapabilitiesKHR(g->phys, g->surface, &caps),
               "vkGetPhysicalDeviceSurfaceCapabilitiesKHR"))
        return false;
    if (!(caps.supportedUsageFlags & VK_IMAGE_USAGE_TRANSFER_DST_BIT)) {
        fprintf(stderr, "game_loop: the swapchain images cannot be cleared with a transfer\n");
        return false;
    }
    VkSurfaceFormatKHR fmt = pick_format(g);
    uint32_t count = caps.minImageCount + 1;
    if (caps.maxImageCount && count > caps.maxImageCount) count = caps.maxImageCount;
    if (count > MAX_IMAGES) count = MAX_IMAGES;
    g->format = fmt.format;
    g->extent = pick_extent(g, &caps);
    /* FIFO is the one mode every driver has, and it paces frames to the display. */
    VkSwapchainCreateInfoKHR ci = {
        .sType = VK_STRUCTURE_TYPE_SWAPCHAIN_CREATE_INFO_KHR, .surface = g->surface, .minImageCount = count,
        .imageFormat = fmt.format, .imageColorSpace = fmt.colorSpace, .imageExtent = g->extent,
        .imageArrayLayers = 1, .imageUsage = VK_IMAGE_USAGE_TRANSFER_DST_BIT,
        .imageSharingMode = VK_SHARING_MODE_EXCLUSIVE, .preTransform = caps.currentTransform,
        .compositeAlpha = VK_COMPOSITE_ALPHA_OPAQUE_BIT_KHR, .presentMode = VK_PRESENT_MODE_FIFO_KHR,
        .clipped = VK_TRUE};
    if (!(caps.supportedCompositeAlpha & VK_COMPOSITE_ALPHA_OPAQUE_BIT_KHR))
        ci.compositeAlpha = (VkCompositeAlphaFlagBitsKHR)(caps.supportedCompositeAlpha & -caps.supportedCompositeAlpha);
    if (!vk_ok(vkCreateSwapchainKHR(g->device, &ci, NULL, &g->swapchain), "vkCreateSwapchainKHR")) return false;
    g->n_images = MAX_IMAGES;
    if (!vk_ok(vkGetSwapchainImagesKHR(g->device, g->swapchain, &g->n_images, g->images), "vkGetSwapchainImagesKHR"))
        return false;
    VkSemaphoreCreateInfo sci = {.sType = VK_STRUCTURE_TYPE_SEMAPHORE_CREATE_INFO};
    for (uint32_t i = 0; i < g->n_images; i++)
        if (!vk_ok(vkCreateSemaphore(g->device, &sci, NULL, &g->rendered[i]), "vkCreateSemaphore")) return false;
    return true;
}

static void destroy_swapchain(game_vk *g)
{
    for (uint32_t i = 0; i < MAX_IMAGES; i++) {
        if (g->rendered[i]) vkDestroySemaphore(g->device, g->rendered[i], NULL);
        g->rendered[i] = VK_NULL_HANDLE;
    }
    if (g->swapchain) vkDestroySwapchainKHR(g->device, g->swapchain, NULL);
    g->swapchain = VK_NULL_HANDLE;
    g->n_images = 0;
}

/* The queue may hold Ember's work as well as ours: wait for all of it, queue locked. */
static void wait_queue_idle(game_vk *g)
{
    game_vk_lock_queue(g);
    vkQueueWaitIdle(g->queue);
    game_vk_unlock_queue(g);
}

/* After VK_ERROR_OUT_OF_DATE_KHR (the window changed): a new swapchain of the new size. */
static bool recreate_swapchain(game_vk *g)
{
    wait_queue_idle(g);
    destroy_swapchain(g);
    return create_swapchain(g);
}

/* ---- public ------------------------------------------------------------------------------- */

int game_vk_create(SDL_Window *window, int validation, game_vk **out)
{
    game_vk *g = calloc(1, sizeof *g);
    *out = g;
    if (!g) return -1;
    g->window = window;
    pthread_mutex_init(&g->queue_mu, NULL);
    if (!create_instance(g, validation)) return -1;
    if (!SDL_Vulkan_CreateSurface(window, g->instance, &g->surface)) {
        fprintf(stderr, "game_loop: SDL_Vulkan_CreateSurface: %s\n", SDL_GetError());
        return -1;
    }
    return pick_device(g) && create_device(g) && create_frames(g) && create_swapchain(g) ? 0 : -1;
}

uint32_t game_vk_destroy(game_vk *g, char *first, size_t cap)
{
    if (first && cap) first[0] = '\0';
    if (!g) return 0;
    if (g->device) {
        wait_queue_idle(g);
        destroy_swapchain(g);
        for (int i = 0; i < FRAMES_IN_FLIGHT; i++) {
            if (g->frames[i].done) vkDestroyFence(g->device, g->frames[i].done, NULL);
            if (g->frames[i].acquired) vkDestroySemaphore(g->device, g->frames[i].acquired, NULL);
        }
        if (g->pool) vkDestroyCommandPool(g->device, g->pool, NULL); /* frees the command buffers */
        vkDestroyDevice(g->device, NULL);
    }
    if (g->surface) vkDestroySurfaceKHR(g->instance, g->surface, NULL);
    if (g->messenger) {
        PFN_vkDestroyDebugUtilsMessengerEXT destroy =
            (PFN_vkDestroyDebugUtilsMessengerEXT)vkGetInstanceProcAddr(g->instance, "vkDestroyDebugUtilsMessengerEXT");
        if (destroy) destroy(g->instance, g->messenger, NULL);
    }
    if (g->instance) vkDestroyInstance(g->instance, NULL);
    uint32_t n = atomic_load(&g->n_messages);
    if (n && first && cap) snprintf(first, cap, "%s", g->first_message);
    pthread_mutex_destroy(&g->queue_mu);
    free(g);
    return n;
}

void game_vk_get_handles(const game_vk *g, game_vk_handles *h)
{
    *h = (game_vk_handles){.instance = g->instance, .physical_device = g->phys, .device = g->device,
                           .queue_family = g->family, .queue_index = 0, .api_version = VK_API_VERSION_1_2,
                           .features = &g->f2, .device_name = g->device_name, .present_mode = "fifo"};
}

void game_vk_lock_queue(void *user) { pthread_mutex_lock(&((game_vk *)user)->queue_mu); }
void game_vk_unlock_queue(void *user) { pthread_mutex_unlock(&((game_vk *)user)->queue_mu); }

/* ---- a frame ------------------------------------------------------------------------------- */

static void image_barrier(VkCommandBuffer cmd, VkImage image, VkImageLayout from, VkImageLayout to,
                          VkAccessFlags src_access, VkAccessFlags dst_access, VkPipelineStageFlags dst_stage)
{
    VkImageMemoryBarrier b = {.sType = VK_STRUCTURE_TYPE_IMAGE_MEMORY_BARRIER, .srcAccessMask = src_access,
                              .dstAccessMask = dst_access, .oldLayout = from, .newLayout = to,
                              .srcQueueFamilyIndex = VK_QUEUE_FAMILY_IGNORED,
                              .dstQueueFamilyIndex = VK_QUEUE_FAMILY_IGNORED, .image = image,
                              .subresourceRange = {VK_IMAGE_ASPECT_COLOR_BIT, 0, 1, 0, 1}};
    /* Source stage TRANSFER: the stage the acquire semaphore's wait is attached to (the
     * first barrier chains after it) and the stage of the clear (the second). */
    vkCmdPipelineBarrier(cmd, VK_PIPELINE_STAGE_TRANSFER_BIT, dst_stage, 0, 0, NULL, 0, NULL, 1, &b);
}

static bool record_clear(VkCommandBuffer cmd, VkImage image, const float rgba[4])
{
    VkCommandBufferBeginInfo bi = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO,
                                   .flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT};
    if (!vk_ok(vkBeginCommandBuffer(cmd, &bi), "vkBeginCommandBuffer")) return false;
    /* UNDEFINED: the old contents are not needed, the whole image is cleared. */
    image_barrier(cmd, image, VK_IMAGE_LAYOUT_UNDEFINED, VK_IMAGE_LAYOUT_TRANSFER_DST_OPTIMAL, 0,
                  VK_ACCESS_TRANSFER_WRITE_BIT, VK_PIPELINE_STAGE_TRANSFER_BIT);
    VkClearColorValue colour = {.float32 = {rgba[0], rgba[1], rgba[2], rgba[3]}};
    VkImageSubresourceRange range = {VK_IMAGE_ASPECT_COLOR_BIT, 0, 1, 0, 1};
    vkCmdClearColorImage(cmd, image, VK_IMAGE_LAYOUT_TRANSFER_DST_OPTIMAL, &colour, 1, &range);
    /* Presentation is ordered by the semaphore; the barrier only changes the layout. */
    image_barrier(cmd, image, VK_IMAGE_LAYOUT_TRANSFER_DST_OPTIMAL, VK_IMAGE_LAYOUT_PRESENT_SRC_KHR,
                  VK_ACCESS_TRANSFER_WRITE_BIT, 0, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT);
    return vk_ok(vkEndCommandBuffer(cmd), "vkEndCommandBuffer");
}

static VkResult submit_and_present(game_vk *g, struct frame *f, uint32_t image)
{
    VkPipelineStageFlags wait_stage = VK_PIPELINE_STAGE_TRANSFER_BIT;
    VkSubmitInfo si = {.sType = VK_STRUCTURE_TYPE_SUBMIT_INFO, .waitSemaphoreCount = 1,
                       .pWaitSemaphores = &f->acquired, .pWaitDstStageMask = &wait_stage,
                       .commandBufferCount = 1, .pCommandBuffers = &f->cmd,
                       .signalSemaphoreCount = 1, .pSignalSemaphores = &g->rendered[image]};
    VkPresentInfoKHR pi = {.sType = VK_STRUCTURE_TYPE_PRESENT_INFO_KHR, .waitSemaphoreCount = 1,
                           .pWaitSemaphores = &g->rendered[image], .swapchainCount = 1,
                           .pSwapchains = &g->swapchain, .pImageIndices = &image};
    /* The same lock Ember takes around its own submissions to this queue. */
    game_vk_lock_queue(g);
    VkResult r = vkQueueSubmit(g->queue, 1, &si, f->done);
    if (r == VK_SUCCESS) r = vkQueuePresentKHR(g->queue, &pi);
    game_vk_unlock_queue(g);
    return r;
}

int game_vk_draw(game_vk *g, const float rgba[4])
{
    struct frame *f = &g->frames[g->frame];
    if (!vk_ok(vkWaitForFences(g->device, 1, &f->done, VK_TRUE, UINT64_MAX), "vkWaitForFences")) return -1;
    uint32_t image;
    VkResult r = vkAcquireNextImageKHR(g->device, g->swapchain, UINT64_MAX, f->acquired, VK_NULL_HANDLE, &image);
    if (r == VK_ERROR_OUT_OF_DATE_KHR) return recreate_swapchain(g) ? 0 : -1; /* skip this frame */
    if (!vk_ok(r, "vkAcquireNextImageKHR")) return -1;
    /* Reset only now: had the acquire failed, the fence would never be signalled again. */
    if (!vk_ok(vkResetFences(g->device, 1, &f->done), "vkResetFences") || !record_clear(f->cmd, g->images[image], rgba))
        return -1;
    r = submit_and_present(g, f, image);
    g->frame = (g->frame + 1) % FRAMES_IN_FLIGHT;
    if (r == VK_ERROR_OUT_OF_DATE_KHR || r == VK_SUBOPTIMAL_KHR) return recreate_swapchain(g) ? 0 : -1;
    return vk_ok(r, "vkQueueSubmit/vkQueuePresentKHR") ? 0 : -1;
}
