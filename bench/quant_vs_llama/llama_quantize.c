/* llama_quantize.c — `llama_quantize IN OUT FTYPE`: llama.cpp's llama_model_quantize with
 * --pure (every matrix to FTYPE's type, llama.cpp's fallbacks) and one thread, for
 * bench/quant-vs-llama.sh to compare `ember quantize` with. Built there against the
 * prebuilt libllama of npm node-llama-cpp and its own llama.h. */
#include <stdio.h>
#include <stdlib.h>

#include "llama.h"

int main(int argc, char **argv)
{
    if (argc != 4) {
        fprintf(stderr, "usage: llama_quantize IN OUT FTYPE\n");
        return 2;
    }
    llama_backend_init();
    llama_model_quantize_params p = llama_model_quantize_default_params();
    p.nthread = 1;
    p.ftype = (enum llama_ftype)atoi(argv[3]);
    p.pure = true;
    p.allow_requantize = true;
    return llama_model_quantize(argv[1], argv[2], &p) == 0 ? 0 : 1;
}
