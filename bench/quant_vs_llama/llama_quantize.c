/* llama_quantize.c — `llama_quantize IN OUT FTYPE pure|rules`: llama.cpp's
 * llama_model_quantize with one thread, for bench/quant-vs-llama.sh to compare `ember
 * quantize` with. "pure" is `llama-quantize --pure` (every matrix FTYPE's type, llama.cpp's
 * fallbacks); "rules" is plain `llama-quantize` (llama.cpp's per-tensor rules for FTYPE).
 * No importance matrix, requantizing allowed. Built there against the prebuilt libllama of
 * npm node-llama-cpp and its own llama.h. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "llama.h"

int main(int argc, char **argv)
{
    if (argc != 5 || (strcmp(argv[4], "pure") != 0 && strcmp(argv[4], "rules") != 0)) {
        fprintf(stderr, "usage: llama_quantize IN OUT FTYPE pure|rules\n");
        return 2;
    }
    llama_backend_init();
    llama_model_quantize_params p = llama_model_quantize_default_params();
    p.nthread = 1;
    p.ftype = (enum llama_ftype)atoi(argv[3]);
    p.pure = strcmp(argv[4], "pure") == 0;
    p.allow_requantize = true;
    return llama_model_quantize(argv[1], argv[2], &p) == 0 ? 0 : 1;
}
