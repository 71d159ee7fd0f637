/* vk_loader.c — the table of vk_loader.h. */
#include <string.h>

#include "os_library.h"
#include "vk_loader.h"

ember_status ember_vk_fn_open(ember_vk_fn *f, PFN_vkGetInstanceProcAddr gipa, ember_err *err)
{
    memset(f, 0, sizeof *f);
    const char *const *names = ember_vulkan_library_names();
    for (size_t i = 0; !gipa && names[i]; i++) {
        if (!(f->library = ember_library_open(names[i]))) continue;
        gipa = (PFN_vkGetInstanceProcAddr)(uintptr_t)ember_library_symbol(f->library, "vkGetInstanceProcAddr");
        if (!gipa) ember_library_close(f->library), f->library = NULL;
    }
    if (!gipa)
        return ember_fail(err, EMBER_ERR_NO_DEVICE, "no Vulkan loader (%s%s): install a Vulkan driver "
                          "(mesa-vulkan-drivers for the CPU driver)", names[0], names[1] ? ", ..." : "");
    f->GetInstanceProcAddr = gipa;
#define LOAD(name) f->name = (PFN_vk##name)gipa(NULL, "vk" #name);
    EMBER_VK_GLOBAL_FUNCTIONS(LOAD)
#undef LOAD
    if (!f->CreateInstance || !f->EnumerateInstanceExtensionProperties || !f->EnumerateInstanceLayerProperties) {
        ember_vk_fn_close(f);
        return ember_fail(err, EMBER_ERR_NO_DEVICE, "the Vulkan loader lacks vkCreateInstance");
    }
    return EMBER_OK;
}

ember_status ember_vk_fn_instance(ember_vk_fn *f, VkInstance instance, ember_err *err)
{
    const char *missing = NULL;
#define LOAD(name) \
    if (!(f->name = (PFN_vk##name)f->GetInstanceProcAddr(instance, "vk" #name)) && !missing) missing = "vk" #name;
    EMBER_VK_INSTANCE_FUNCTIONS(LOAD)
#undef LOAD
    if (missing) return ember_fail(err, EMBER_ERR_NO_DEVICE, "the Vulkan instance lacks %s (Vulkan 1.2 has it)", missing);
    return EMBER_OK;
}

ember_status ember_vk_fn_device(ember_vk_fn *f, VkDevice device, ember_err *err)
{
    const char *missing = NULL;
#define LOAD(name) \
    if (!(f->name = (PFN_vk##name)f->GetDeviceProcAddr(device, "vk" #name)) && !missing) missing = "vk" #name;
    EMBER_VK_DEVICE_FUNCTIONS(LOAD)
#undef LOAD
    if (missing) return ember_fail(err, EMBER_ERR_NO_DEVICE, "the Vulkan device lacks %s (Vulkan 1.2 has it)", missing);
    return EMBER_OK;
}

void ember_vk_fn_close(ember_vk_fn *f)
{
    ember_library_close(f->library);
    memset(f, 0, sizeof *f);
}
