/* game_vk.h — the game's own Vulkan renderer for examples/game_loop.c: instance, device,
 * one graphics+compute queue, and a swapchain on an SDL window whose images it clears
 * every frame. It knows nothing of Ember; game_loop.c hands its handles over. */
#ifndef GAME_VK_H
#define GAME_VK_H

#include <stdint.h>

#include <SDL.h>
#include <vulkan/vulkan.h>

typedef struct game_vk game_vk;

/* What another Vulkan user of the same device (Ember) needs to know. */
typedef struct game_vk_handles {
    VkInstance instance;
    VkPhysicalDevice physical_device;
    VkDevice device;
    uint32_t queue_family, queue_index;
    uint32_t api_version;                     /* the instance's apiVersion */
    const VkPhysicalDeviceFeatures2 *features; /* the chain given to vkCreateDevice */
    const char *device_name;
    const char *present_mode;                 /* "fifo", ... */
} game_vk_handles;

/* Creates everything on window (made with SDL_WINDOW_VULKAN). validation: 1 = enable
 * VK_LAYER_KHRONOS_validation and count its warnings and errors (an error when the layer
 * is not installed). Prints what failed to stderr and returns -1; 0 on success. */
int game_vk_create(SDL_Window *window, int validation, game_vk **out);
/* Destroys in reverse order of creation, after waiting for the device (queue locked).
 * The window stays the caller's. Returns the validation layer's warnings and errors over
 * the whole run, destruction included (leaked objects are reported then), and copies the
 * first into first (cap bytes; may be NULL). */
uint32_t game_vk_destroy(game_vk *g, char *first, size_t cap);

void game_vk_get_handles(const game_vk *g, game_vk_handles *h);

/* One frame: acquire a swapchain image, clear it to rgba, present it. Returns -1 on a
 * Vulkan failure (printed), else 0. */
int game_vk_draw(game_vk *g, const float rgba[4]);

/* The mutex around every use of the one queue (vkQueueSubmit, vkQueuePresentKHR,
 * vkQueueWaitIdle). user is the game_vk; shaped as ember_vulkan_device's callbacks. */
void game_vk_lock_queue(void *user);
void game_vk_unlock_queue(void *user);

#endif /* GAME_VK_H */
