/* vk_pipeline.c — compute pipelines: bindings 0..n-1 of set 0 (storage buffers, uniform
 * texel buffers or uniform buffers), parameters as push constants, sizes as
 * specialization constants. A batch is created on worker threads, through a
 * VkPipelineCache when the caller has one. */
#include "os_thread.h"
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>

#include "common/alloc.h"
#include "vk_internal.h"
#include "vk_pipeline_internal.h"
#include "vk_result.h"

#define MAX_SPECS 16
#define MAX_THREADS 8

ember_status ember_vk_pipeline_create(ember_vk *vk, const char *name, const uint32_t *spirv,
                                      size_t spirv_bytes, uint32_t n_bindings, uint32_t push_size,
                                      const ember_vk_spec *specs, uint32_t n_specs,
                                      ember_vk_pipeline **out, ember_err *err)
{
    return ember_vk_pipeline_create_ex(vk, name, spirv, spirv_bytes, n_bindings, NULL, push_size, specs, n_specs,
                                       out, err);
}

static ember_status check_desc(const ember_vk *vk, const ember_vk_pipeline_desc *d, ember_err *err)
{
    if (d->n_bindings > EMBER_VK_MAX_BINDINGS || d->n_specs > MAX_SPECS || d->push_size > vk->caps.max_push)
        return ember_fail(err, EMBER_ERR_INVALID_ARG, "pipeline %s: too many bindings/specs or push bytes", d->name);
    for (uint32_t i = 0; d->kinds && i < d->n_bindings; i++)
        if (d->kinds[i] > EMBER_VK_BIND_UNIFORM)
            return ember_fail(err, EMBER_ERR_INVALID_ARG, "pipeline %s: binding %u of unknown kind", d->name, i);
    const ember_vk_caps *c = &vk->caps;
    if (d->subgroup && d->subgroup != c->subgroup_size && !(c->subgroup_min <= d->subgroup && d->subgroup <= c->subgroup_max))
        return ember_fail(err, EMBER_ERR_INVALID_ARG, "pipeline %s: subgroups of %u are not the device's", d->name,
                          d->subgroup);
    return EMBER_OK;
}

static ember_status create_layouts(ember_vk *vk, ember_vk_pipeline *p, ember_err *err)
{
    VkDescriptorSetLayoutBinding b[EMBER_VK_MAX_BINDINGS];
    for (uint32_t i = 0; i < p->n_bindings; i++)
        b[i] = (VkDescriptorSetLayoutBinding){.binding = i, .descriptorType = ember_vk_descriptor_type(p->kinds[i]),
                                              .descriptorCount = 1, .stageFlags = VK_SHADER_STAGE_COMPUTE_BIT};
    VkDescriptorSetLayoutCreateInfo dl = {.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO,
                                          .bindingCount = p->n_bindings, .pBindings = b};
    ember_status s = ember_vk_check(vk->fn.CreateDescriptorSetLayout(vk->device, &dl, NULL, &p->set_layout), err,
                                    "vkCreateDescriptorSetLayout");
    VkPushConstantRange pr = {VK_SHADER_STAGE_COMPUTE_BIT, 0, p->push_size};
    VkPipelineLayoutCreateInfo pl = {.sType = VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO,
                                     .setLayoutCount = 1, .pSetLayouts = &p->set_layout,
                                     .pushConstantRangeCount = p->push_size ? 1 : 0, .pPushConstantRanges = &pr};
    if (s == EMBER_OK)
        s = ember_vk_check(vk->fn.CreatePipelineLayout(vk->device, &pl, NULL, &p->layout), err, "vkCreatePipelineLayout");
    return s;
}

/* Whether to pin the pipeline to the default subgroup size with full subgroups: the
 * kernels plan their tiles for caps.subgroup_size, but without a requirement a driver may
 * compile a shader for another size (Intel: 8, 16 or 32) or leave subgroups partly
 * empty. Possible where the workgroup (spec constant 0, local_size_x_id in every shader)
 * is whole subgroups. */
/* The subgroup size d's pipeline is pinned to (0: not pinned). */
static uint32_t pinned_size(const ember_vk_caps *caps, const ember_vk_pipeline_desc *d)
{
    if (d->subgroup) return caps->subgroup_min <= d->subgroup && d->subgroup <= caps->subgroup_max ? d->subgroup : 0;
    if (!caps->subgroup_pin || !caps->subgroup_size) return 0;
    for (uint32_t i = 0; i < d->n_specs; i++)
        if (d->specs[i].id == 0) return d->specs[i].value % caps->subgroup_size == 0 ? caps->subgroup_size : 0;
    return 0;
}

/* The shader module lives only as long as the call: the pipeline keeps what it needs. */
static ember_status create_pipeline(ember_vk *vk, VkPipelineCache cache, const ember_vk_pipeline_desc *d,
                                    ember_vk_pipeline *p, ember_err *err)
{
    VkShaderModuleCreateInfo mi = {.sType = VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO,
                                   .codeSize = d->spirv_bytes, .pCode = d->spirv};
    VkShaderModule module = VK_NULL_HANDLE;
    ember_status s = ember_vk_check(vk->fn.CreateShaderModule(vk->device, &mi, NULL, &module), err, "vkCreateShaderModule");
    VkSpecializationMapEntry map[MAX_SPECS];
    uint32_t data[MAX_SPECS];
    for (uint32_t i = 0; i < d->n_specs; i++) {
        map[i] = (VkSpecializationMapEntry){d->specs[i].id, i * 4, 4};
        data[i] = d->specs[i].value;
    }
    VkSpecializationInfo si = {d->n_specs, map, d->n_specs * 4, data};
    VkComputePipelineCreateInfo ci = {
        .sType = VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO,
        .stage = {.sType = VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO,
                  .stage = VK_SHADER_STAGE_COMPUTE_BIT, .module = module, .pName = "main",
                  .pSpecializationInfo = d->n_specs ? &si : NULL},
        .layout = p->layout};
    VkPipelineShaderStageRequiredSubgroupSizeCreateInfoEXT req = {
        .sType = VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_REQUIRED_SUBGROUP_SIZE_CREATE_INFO_EXT,
        .requiredSubgroupSize = pinned_size(&vk->caps, d)};
    if (req.requiredSubgroupSize) {
        ci.stage.pNext = &req;
        ci.stage.flags = VK_PIPELINE_SHADER_STAGE_CREATE_REQUIRE_FULL_SUBGROUPS_BIT_EXT;
    }
    if (s == EMBER_OK)
        s = ember_vk_check(vk->fn.CreateComputePipelines(vk->device, cache, 1, &ci, NULL, &p->pipeline), err,
                           "vkCreateComputePipelines");
    if (module) vk->fn.DestroyShaderModule(vk->device, module, NULL);
    return s;
}

static ember_status create_one(ember_vk *vk, VkPipelineCache cache, const ember_vk_pipeline_desc *d,
                               ember_vk_pipeline **out, ember_err *err)
{
    *out = NULL;
    ember_status s = check_desc(vk, d, err);
    if (s != EMBER_OK) return s;
    ember_vk_pipeline *p = ember_calloc(1, sizeof *p);
    if (!p) return ember_fail(err, EMBER_ERR_OUT_OF_MEMORY, "out of memory");
    snprintf(p->name, sizeof p->name, "%s", d->name);
    p->n_bindings = d->n_bindings;
    p->push_size = d->push_size;
    for (uint32_t i = 0; i < d->n_bindings; i++) p->kinds[i] = d->kinds ? d->kinds[i] : EMBER_VK_BIND_STORAGE;
    s = create_layouts(vk, p, err);
    if (s == EMBER_OK) s = create_pipeline(vk, cache, d, p, err);
    if (s != EMBER_OK) {
        ember_fail_ctx(err, s, "pipeline %s", d->name);
        ember_vk_pipeline_destroy(vk, p);
        return s;
    }
    *out = p;
    return EMBER_OK;
}

ember_status ember_vk_pipeline_create_ex(ember_vk *vk, const char *name, const uint32_t *spirv,
                                         size_t spirv_bytes, uint32_t n_bindings,
                                         const ember_vk_binding_kind *kinds, uint32_t push_size,
                                         const ember_vk_spec *specs, uint32_t n_specs,
                                         ember_vk_pipeline **out, ember_err *err)
{
    ember_vk_pipeline_desc d = {name, spirv, spirv_bytes, n_bindings, kinds, push_size, specs, n_specs};
    return create_one(vk, VK_NULL_HANDLE, &d, out, err);
}

/* ---- a batch on worker threads ------------------------------------------------------ */

typedef struct batch {
    ember_vk *vk;
    VkPipelineCache cache;
    const ember_vk_pipeline_desc *d;
    uint32_t n;
    ember_vk_pipeline **out;
    ember_status *status;       /* per pipeline, so the first failure in d's order wins */
    ember_err *errs;
    atomic_uint next;           /* the next pipeline nobody took yet */
} batch;

/* Each worker takes the next pipeline until none is left: compile times differ by 10x
 * and more, so a fixed split would leave threads idle. */
static void worker(void *arg)
{
    batch *b = arg;
    for (uint32_t i; (i = atomic_fetch_add(&b->next, 1)) < b->n;)
        b->status[i] = create_one(b->vk, b->cache, &b->d[i], &b->out[i], &b->errs[i]);
}

static uint32_t thread_count(uint32_t n)
{
    uint32_t t = ember_cpu_count();
    if (t > MAX_THREADS) t = MAX_THREADS;
    return t < n ? t : n;
}

/* Runs the batch on n_threads threads, the calling one among them; a thread that cannot
 * be started leaves its share to the others. */
static void run_batch(batch *b, uint32_t n_threads)
{
    ember_thread th[MAX_THREADS];
    bool started[MAX_THREADS] = {false};
    for (uint32_t i = 1; i < n_threads; i++) started[i] = ember_thread_start(&th[i], worker, b);
    worker(b);
    for (uint32_t i = 1; i < n_threads; i++)
        if (started[i]) ember_thread_join(&th[i]);
}

ember_status ember_vk_pipelines_create(ember_vk *vk, VkPipelineCache cache, const ember_vk_pipeline_desc *d,
                                       uint32_t n, ember_vk_pipeline **out, ember_err *err)
{
    for (uint32_t i = 0; i < n; i++) out[i] = NULL;
    if (n == 0) return EMBER_OK;
    ember_status *status = ember_calloc(n, sizeof *status);
    ember_err *errs = ember_calloc(n, sizeof *errs);
    if (!status || !errs) {
        ember_free(status);
        ember_free(errs);
        return ember_fail(err, EMBER_ERR_OUT_OF_MEMORY, "out of memory");
    }
    batch b = {.vk = vk, .cache = cache, .d = d, .n = n, .out = out, .status = status, .errs = errs};
    atomic_init(&b.next, 0);
    run_batch(&b, thread_count(n));
    ember_status s = EMBER_OK;
    for (uint32_t i = 0; i < n && s == EMBER_OK; i++)
        if ((s = status[i]) != EMBER_OK && err) *err = errs[i];
    if (s != EMBER_OK)
        for (uint32_t i = 0; i < n; i++) {
            ember_vk_pipeline_destroy(vk, out[i]);
            out[i] = NULL;
        }
    ember_free(status);
    ember_free(errs);
    return s;
}

void ember_vk_pipeline_destroy(ember_vk *vk, ember_vk_pipeline *p)
{
    if (!p) return;
    if (p->pipeline) vk->fn.DestroyPipeline(vk->device, p->pipeline, NULL);
    if (p->layout) vk->fn.DestroyPipelineLayout(vk->device, p->layout, NULL);
    if (p->set_layout) vk->fn.DestroyDescriptorSetLayout(vk->device, p->set_layout, NULL);
    ember_free(p);
}
