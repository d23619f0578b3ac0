// A small harness over libmtmd's clip encoder (llama.cpp 0c1e570, tools/mtmd/clip.h), built by
// benchmarks/vs_llamacpp_image.py: it loads a projector GGUF, encodes one already-normalised image
// (float32, height x width x 3, the layout clip_image_f32 holds) REPS times on THREADS threads,
// prints one "encode_ms <ms>" line per repetition and writes the last embedding (float32, tokens x
// width) to OUT. No text model is needed: the clip layer is called below mtmd's tokenizer.
//
//   mtmd_encode MMPROJ PIXELS NX NY THREADS REPS OUT
#include "clip.h"
#include "clip-impl.h"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <vector>

int main(int argc, char ** argv) {
    if (argc != 8) {
        fprintf(stderr, "usage: %s MMPROJ PIXELS NX NY THREADS REPS OUT\n", argv[0]);
        return 2;
    }
    const int nx = atoi(argv[3]), ny = atoi(argv[4]), threads = atoi(argv[5]), reps = atoi(argv[6]);
    std::vector<float> pixels((size_t) nx * ny * 3);
    std::ifstream in(argv[2], std::ios::binary);
    if (!in.read(reinterpret_cast<char *>(pixels.data()), pixels.size() * sizeof(float))) {
        fprintf(stderr, "cannot read %zu floats from %s\n", pixels.size(), argv[2]);
        return 2;
    }
    clip_context_params params{};
    params.use_gpu = false;
    params.flash_attn_type = CLIP_FLASH_ATTN_TYPE_AUTO;
    params.image_min_tokens = -1;
    params.image_max_tokens = -1;
    params.warmup = false;
    clip_init_result res = clip_init(argv[1], params);
    if (res.ctx_v == nullptr) {
        fprintf(stderr, "clip_init failed for %s\n", argv[1]);
        return 1;
    }
    clip_image_f32 img;
    img.set_size({nx, ny}, false, false);
    img.cpy_buf(pixels);
    const int tokens = clip_n_output_tokens(res.ctx_v, &img), width = clip_n_mmproj_embd(res.ctx_v);
    std::vector<float> out((size_t) tokens * width);  // clip_encode copies only into a sized buffer
    for (int r = 0; r < reps; r++) {
        const auto t0 = std::chrono::steady_clock::now();
        if (!clip_image_encode(res.ctx_v, threads, &img, out)) {
            fprintf(stderr, "clip_image_encode failed\n");
            return 1;
        }
        const auto t1 = std::chrono::steady_clock::now();
        printf("encode_ms %.3f\n", std::chrono::duration<double, std::milli>(t1 - t0).count());
        fflush(stdout);
    }
    printf("tokens %d width %d\n", tokens, width);
    std::ofstream o(argv[7], std::ios::binary);
    o.write(reinterpret_cast<const char *>(out.data()), out.size() * sizeof(float));
    clip_free(res.ctx_v);
    return 0;
}
