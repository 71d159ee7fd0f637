/* cmd_info.c — `ember info`: every Vulkan device with the features and limits that
 * decide Ember's shader variants and buffer sizes, and the variants Ember would choose
 * there with the reasons (ember_list_devices; docs/portability.md). */
#include <string.h>

#include "cli.h"
#include "commands.h"

#define MAX_DEVICES 16

static const char *type_name(ember_device_type t)
{
    switch (t) {
    case EMBER_DEVICE_DISCRETE: return "discrete";
    case EMBER_DEVICE_INTEGRATED: return "integrated";
    case EMBER_DEVICE_VIRTUAL: return "virtual";
    case EMBER_DEVICE_CPU: return "cpu";
    default: return "other";
    }
}

static const char *yes(int b) { return b ? "yes" : "no"; }
static const char *json_bool(int b) { return b ? "true" : "false"; }

static void print_text(uint32_t i, const ember_device_info *d)
{
    printf("device %u: %s (%s, Vulkan %u.%u.%u)\n", i, d->name, type_name(d->type), d->api_major, d->api_minor,
           d->api_patch);
    printf("  features: fp16 %s, int8 %s, storage8 %s, storage16 %s, int-dot %s, coop-matrix %s\n", yes(d->fp16),
           yes(d->int8), yes(d->storage8), yes(d->storage16), yes(d->int_dot), yes(d->coop_matrix));
    printf("  subgroup: size %u, arithmetic %s, shuffle %s, size control %s\n", d->subgroup_size,
           yes(d->subgroup_arith), yes(d->subgroup_shuffle), yes(d->subgroup_size_control));
    printf("  limits: storage range %llu, allocation %llu, shared %u, push %u, workgroup %u invocations\n",
           (unsigned long long)d->max_storage_range, (unsigned long long)d->max_alloc, d->max_shared, d->max_push,
           d->max_workgroup_invocations);
    printf("  memory: device-local %.1f GiB%s, timestamps %s\n", d->device_local_bytes / 1073741824.0,
           d->unified_memory ? " (host-visible)" : "", yes(d->timestamps));
    printf("  variants:\n");
    for (const char *p = d->variants; *p;) {
        size_t len = strcspn(p, "\n");
        printf("    %.*s\n", (int)len, p);
        p += len + (p[len] == '\n');
    }
}

/* The variants text as a JSON array of its lines. */
static void print_json_lines(const char *text)
{
    printf("[");
    for (const char *p = text; *p;) {
        size_t len = strcspn(p, "\n");
        if (p != text) printf(", ");
        cli_json_string(stdout, p, len);
        p += len + (p[len] == '\n');
    }
    printf("]");
}

static void print_json(uint32_t i, const ember_device_info *d)
{
    printf("%s{\"index\": %u, \"name\": ", i ? ", " : "", i);
    cli_json_string(stdout, d->name, strlen(d->name));
    printf(", \"type\": \"%s\", \"api\": \"%u.%u.%u\", \"fp16\": %s, \"int8\": %s, \"storage8\": %s, "
           "\"storage16\": %s, \"int_dot\": %s, \"coop_matrix\": %s, \"subgroup_size\": %u, "
           "\"subgroup_arith\": %s, \"max_storage_range\": %llu, \"max_alloc\": %llu, \"max_shared\": %u, "
           "\"max_push\": %u, \"device_local_bytes\": %llu",
           type_name(d->type), d->api_major, d->api_minor, d->api_patch, json_bool(d->fp16), json_bool(d->int8),
           json_bool(d->storage8), json_bool(d->storage16), json_bool(d->int_dot), json_bool(d->coop_matrix),
           d->subgroup_size, json_bool(d->subgroup_arith), (unsigned long long)d->max_storage_range,
           (unsigned long long)d->max_alloc, d->max_shared, d->max_push, (unsigned long long)d->device_local_bytes);
    printf(", \"subgroup_shuffle\": %s, \"subgroup_size_control\": %s, \"unified_memory\": %s, \"variants\": ",
           json_bool(d->subgroup_shuffle), json_bool(d->subgroup_size_control), json_bool(d->unified_memory));
    print_json_lines(d->variants);
    printf("}");
}

int ember_cmd_info_usage(FILE *out, int code)
{
    fprintf(out, "usage: ember info [--json]\n"
                 "  the Vulkan devices with their features, limits and the shader variants Ember picks;\n"
                 "  --device N and EMBER_DEVICE=N elsewhere take the index printed here\n"
                 "usage: ember info -m MODEL.gguf [--ctx N] [--kv-type f32|f16|q8_0] [--budget MIB]\n"
                 "                  [--max-batch-tokens N] [--json]\n"
                 "  the model's shape and tensor types, and the device memory its weights, a KV cache of\n"
                 "  N tokens (the model's context) and one engine's step buffers take; with --budget,\n"
                 "  whether that fits. Read from the file alone: no device is used\n"
                 "  defaults: --ctx the model's context, --kv-type f32, --max-batch-tokens 256, no --budget\n");
    return code;
}

static int usage(FILE *out, int code) { return ember_cmd_info_usage(out, code); }

int ember_cmd_info(int argc, char **argv)
{
    bool json = false;
    for (int i = 1; i < argc; i++)
        if (cli_is_help(argv[i])) return usage(stdout, CLI_OK);
    for (int i = 1; i < argc; i++)
        if (strcmp(argv[i], "-m") == 0 || strcmp(argv[i], "--model") == 0) return ember_cmd_info_model(argc, argv);
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--json") == 0) {
            json = true;
            continue;
        }
        cli_unknown("info", argv[i]);
        return usage(stderr, CLI_USAGE);
    }
    ember_device_info dev[MAX_DEVICES];
    size_t n = 0;
    char msg[512];
    if (ember_list_devices(dev, MAX_DEVICES, &n, msg, sizeof msg) != EMBER_OK) {
        fprintf(stderr, "ember: %s\n", msg);
        return 1;
    }
    if (n > MAX_DEVICES) n = MAX_DEVICES;
    if (json) printf("{\"devices\": [");
    for (uint32_t i = 0; i < n; i++) json ? print_json(i, &dev[i]) : print_text(i, &dev[i]);
    if (json) printf("]}\n");
    if (!json && n == 0) printf("no Vulkan devices\n");
    ember_free_devices(dev, n);
    return 0;
}
