{
  "targets": [
    {
      "target_name": "sharp_native",
      "sources": [
        "src/addon.cc",
        "src/matmul.cc",
        "src/elementwise.cc",
        "src/layout.cc",
        "src/reduce.cc",
        "src/adamw.cc",
        "src/fused.cc",
        "src/attention.cc",
        "src/bf16.cc",
        "src/pool.cc"
      ],
      "include_dirs": [
        "<!(node -p \"require('node-addon-api').include_dir\")",
        "/usr/include/x86_64-linux-gnu/openblas-pthread",
        "/usr/include/openblas"
      ],
      "defines": ["NAPI_VERSION=8", "NAPI_DISABLE_CPP_EXCEPTIONS"],
      "cflags_cc": ["-O3", "-march=native", "-std=c++17", "-fno-math-errno", "-fno-trapping-math"],
      "cflags_cc!": ["-fno-exceptions"],
      "libraries": ["-lopenblas"]
    }
  ]
}
