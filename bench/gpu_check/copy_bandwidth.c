/* copy_bandwidth.c — the memory bandwidth of a Vulkan device as a buffer copy measures it
 * (bench/gpu-check.sh): two device-local buffers of up to 1 GiB, copied one into the other
 * COPIES times between two timestamps, after one copy to warm up. Every byte copied is
 * read once and written once, so the bandwidth counted is 2 x bytes x copies / time: the
 * memory traffic a decode step's weight reads are compared with.
 *   copy_bandwidth [DEVICE]    DEVICE: the index `ember info` prints (default: the first
 *                              discrete GPU, else device 0, as Ember picks)
 * Prints one JSON line: {"device", "bytes", "copies", "ms", "gb_s"}. Exit 1 on failure. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <vulkan/vulkan.h>

#define COPIES 20
#define MAX_BYTES (1ull << 30)

#define CHECK(call) do { VkResult r_ = (call); if (r_ != VK_SUCCESS) { \
    fprintf(stderr, "copy_bandwidth: %s failed (%d)\n", #call, (int)r_); exit(1); } } while (0)

static VkPhysicalDevice pick(VkInstance inst, int want)
{
    VkPhysicalDevice devs[16];
    uint32_t n = 16;
    CHECK(vkEnumeratePhysicalDevices(inst, &n, devs));
    if (n == 0) fprintf(stderr, "copy_bandwidth: no Vulkan device\n"), exit(1);
    if (want >= 0 && (uint32_t)want >= n) fprintf(stderr, "copy_bandwidth: no device %d\n", want), exit(1);
    if (want >= 0) return devs[want];
    for (uint32_t i = 0; i < n; i++) {
        VkPhysicalDeviceProperties p;
        vkGetPhysicalDeviceProperties(devs[i], &p);
        if (p.deviceType == VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU) return devs[i];
    }
    return devs[0];
}

static uint32_t queue_family(VkPhysicalDevice pd)
{
    VkQueueFamilyProperties q[16];
    uint32_t n = 16;
    vkGetPhysicalDeviceQueueFamilyProperties(pd, &n, q);
    for (uint32_t i = 0; i < n; i++)
        if ((q[i].queueFlags & VK_QUEUE_COMPUTE_BIT) && q[i].timestampValidBits) return i;
    fprintf(stderr, "copy_bandwidth: no compute queue with timestamps\n");
    exit(1);
}

/* A device-local buffer of size bytes, bound to memory of its own. */
static VkBuffer make_buffer(VkPhysicalDevice pd, VkDevice dev, VkDeviceSize size, VkDeviceMemory *mem)
{
    VkBufferCreateInfo bi = {.sType = VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO, .size = size,
                             .usage = VK_BUFFER_USAGE_TRANSFER_SRC_BIT | VK_BUFFER_USAGE_TRANSFER_DST_BIT};
    VkBuffer b;
    CHECK(vkCreateBuffer(dev, &bi, NULL, &b));
    VkMemoryRequirements req;
    vkGetBufferMemoryRequirements(dev, b, &req);
    VkPhysicalDeviceMemoryProperties mp;
    vkGetPhysicalDeviceMemoryProperties(pd, &mp);
    uint32_t type = UINT32_MAX;
    for (uint32_t i = 0; i < mp.memoryTypeCount && type == UINT32_MAX; i++)
        if ((req.memoryTypeBits >> i & 1) && (mp.memoryTypes[i].propertyFlags & VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT))
            type = i;
    if (type == UINT32_MAX) fprintf(stderr, "copy_bandwidth: no device-local memory\n"), exit(1);
    VkMemoryAllocateInfo ai = {.sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO, .allocationSize = req.size,
                               .memoryTypeIndex = type};
    CHECK(vkAllocateMemory(dev, &ai, NULL, mem));
    CHECK(vkBindBufferMemory(dev, b, *mem, 0));
    return b;
}

/* The buffers' size: 1 GiB, or an eighth of the largest device-local heap if smaller. */
static VkDeviceSize buffer_bytes(VkPhysicalDevice pd)
{
    VkPhysicalDeviceMemoryProperties mp;
    vkGetPhysicalDeviceMemoryProperties(pd, &mp);
    VkDeviceSize heap = 0;
    for (uint32_t i = 0; i < mp.memoryHeapCount; i++)
        if ((mp.memoryHeaps[i].flags & VK_MEMORY_HEAP_DEVICE_LOCAL_BIT) && mp.memoryHeaps[i].size > heap)
            heap = mp.memoryHeaps[i].size;
    VkDeviceSize b = heap / 8 < MAX_BYTES ? heap / 8 : MAX_BYTES;
    return b & ~(VkDeviceSize)0xffff;
}

int main(int argc, char **argv)
{
    VkApplicationInfo app = {.sType = VK_STRUCTURE_TYPE_APPLICATION_INFO, .apiVersion = VK_API_VERSION_1_1};
    VkInstanceCreateInfo ici = {.sType = VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO, .pApplicationInfo = &app};
    VkInstance inst;
    CHECK(vkCreateInstance(&ici, NULL, &inst));
    VkPhysicalDevice pd = pick(inst, argc > 1 ? atoi(argv[1]) : -1);
    VkPhysicalDeviceProperties props;
    vkGetPhysicalDeviceProperties(pd, &props);
    uint32_t qf = queue_family(pd);
    float prio = 1.0f;
    VkDeviceQueueCreateInfo qci = {.sType = VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO, .queueFamilyIndex = qf,
                                   .queueCount = 1, .pQueuePriorities = &prio};
    VkDeviceCreateInfo dci = {.sType = VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO, .queueCreateInfoCount = 1,
                              .pQueueCreateInfos = &qci};
    VkDevice dev;
    CHECK(vkCreateDevice(pd, &dci, NULL, &dev));
    VkQueue q;
    vkGetDeviceQueue(dev, qf, 0, &q);

    VkDeviceSize bytes = buffer_bytes(pd);
    VkDeviceMemory ma, mb;
    VkBuffer a = make_buffer(pd, dev, bytes, &ma), b = make_buffer(pd, dev, bytes, &mb);
    VkQueryPoolCreateInfo qpi = {.sType = VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO,
                                 .queryType = VK_QUERY_TYPE_TIMESTAMP, .queryCount = 2};
    VkQueryPool qp;
    CHECK(vkCreateQueryPool(dev, &qpi, NULL, &qp));
    VkCommandPoolCreateInfo cpi = {.sType = VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO, .queueFamilyIndex = qf};
    VkCommandPool pool;
    CHECK(vkCreateCommandPool(dev, &cpi, NULL, &pool));
    VkCommandBufferAllocateInfo cai = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO, .commandPool = pool,
                                       .level = VK_COMMAND_BUFFER_LEVEL_PRIMARY, .commandBufferCount = 1};
    VkCommandBuffer cb;
    CHECK(vkAllocateCommandBuffers(dev, &cai, &cb));

    VkCommandBufferBeginInfo begin = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
    CHECK(vkBeginCommandBuffer(cb, &begin));
    vkCmdResetQueryPool(cb, qp, 0, 2);
    VkBufferCopy region = {0, 0, bytes};
    VkMemoryBarrier mb_ = {.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER, .srcAccessMask = VK_ACCESS_TRANSFER_WRITE_BIT,
                           .dstAccessMask = VK_ACCESS_TRANSFER_READ_BIT | VK_ACCESS_TRANSFER_WRITE_BIT};
    vkCmdCopyBuffer(cb, a, b, 1, &region); /* warm-up */
    for (int i = 0; i <= COPIES; i++) {
        vkCmdPipelineBarrier(cb, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_PIPELINE_STAGE_TRANSFER_BIT, 0, 1, &mb_, 0, NULL,
                             0, NULL);
        if (i == 0) vkCmdWriteTimestamp(cb, VK_PIPELINE_STAGE_TRANSFER_BIT, qp, 0);
        if (i < COPIES) vkCmdCopyBuffer(cb, i % 2 ? b : a, i % 2 ? a : b, 1, &region);
    }
    vkCmdWriteTimestamp(cb, VK_PIPELINE_STAGE_TRANSFER_BIT, qp, 1);
    CHECK(vkEndCommandBuffer(cb));
    VkSubmitInfo si = {.sType = VK_STRUCTURE_TYPE_SUBMIT_INFO, .commandBufferCount = 1, .pCommandBuffers = &cb};
    CHECK(vkQueueSubmit(q, 1, &si, VK_NULL_HANDLE));
    CHECK(vkQueueWaitIdle(q));
    uint64_t ts[2];
    CHECK(vkGetQueryPoolResults(dev, qp, 0, 2, sizeof ts, ts, sizeof ts[0],
                                VK_QUERY_RESULT_64_BIT | VK_QUERY_RESULT_WAIT_BIT));
    double ms = (double)(ts[1] - ts[0]) * props.limits.timestampPeriod / 1e6;
    printf("{\"device\": \"%s\", \"bytes\": %llu, \"copies\": %d, \"ms\": %.3f, \"gb_s\": %.2f}\n", props.deviceName,
           (unsigned long long)bytes, COPIES, ms, ms > 0 ? 2.0 * (double)bytes * COPIES / (ms * 1e6) : 0.0);

    vkDestroyCommandPool(dev, pool, NULL);
    vkDestroyQueryPool(dev, qp, NULL);
    vkDestroyBuffer(dev, a, NULL), vkDestroyBuffer(dev, b, NULL);
    vkFreeMemory(dev, ma, NULL), vkFreeMemory(dev, mb, NULL);
    vkDestroyDevice(dev, NULL);
    vkDestroyInstance(inst, NULL);
    return 0;
}
