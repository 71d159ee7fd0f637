/* embed.c — the smallest program that embeds Ember: load a model, serve one prompt,
 * print the tokens as they stream.
 * Build, against an installed Ember (cmake --install build --prefix P; then
 * PKG_CONFIG_PATH=P/lib/pkgconfig, or P/lib/<multiarch>/pkgconfig when P is /usr):
 *     cc embed.c $(pkg-config --cflags --libs ember) -o embed
 * Run: ./embed MODEL.gguf [PROMPT] */
#include <stdio.h>

#include "ember.h"

static int on_token(void *user, ember_request_id id, uint32_t token, const char *text, size_t len)
{
    fwrite(text, 1, len, stdout);
    fflush(stdout);
    return 0; /* keep going */
}

static void on_done(void *user, ember_request_id id, ember_finish why, const ember_request_metrics *m)
{
    printf("\n[%u tokens, first after %.0f ms]\n", m->n_gen, m->ttft_ms);
    *(int *)user = 1;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: %s MODEL.gguf [PROMPT]\n", argv[0]);
        return 2;
    }
    ember_model *model = NULL;
    ember_engine *engine = NULL;
    if (ember_model_load(argv[1], NULL, &model) != EMBER_OK) {
        fprintf(stderr, "load: %s\n", ember_model_error(model));
        ember_model_free(model);
        return 1;
    }
    if (ember_engine_create(model, NULL, &engine) != EMBER_OK) {
        fprintf(stderr, "engine: %s\n", ember_engine_error(engine));
        return 1;
    }
    int done = 0;
    ember_request_desc req = {
        .prompt = argc > 2 ? argv[2] : "Once upon a time",
        .max_tokens = 32,
        .on_token = on_token,
        .on_done = on_done,
        .user = &done,
    };
    ember_status s = ember_submit(engine, &req, NULL);
    /* e.g. once per game frame; EMBER_IDLE (nothing to run) is not an error */
    while (s >= 0 && !done) s = ember_engine_step(engine);
    if (s < 0) fprintf(stderr, "error: %s\n", ember_engine_error(engine));
    ember_engine_destroy(engine);
    ember_model_free(model);
    return s < 0 ? 1 : 0;
}
