# The layers, bottom first: which files each owns, which layers' headers its files may reach (USES,
# directly or through other headers) and which third-party libraries. A layer links exactly those,
# PRIVATE; tools/layer_check fails the build on any other include. include/pagedserve/ is the shared
# vocabulary every layer may name (base), and the engine's interface (api); a module's own headers
# sit beside its sources.

pagedserve_third_party(asio PREFIXES boost/asio TARGETS Boost::boost)
pagedserve_third_party(beast PREFIXES boost/beast TARGETS Boost::boost)
pagedserve_third_party(boost PREFIXES boost/ TARGETS Boost::boost)  # the rest of Boost
pagedserve_third_party(tbb PREFIXES tbb/ oneapi/ TARGETS TBB::tbb)
pagedserve_third_party(spdlog PREFIXES spdlog/ fmt/ TARGETS spdlog::spdlog)
pagedserve_third_party(simdjson PREFIXES simdjson TARGETS simdjson::simdjson)
pagedserve_third_party(openssl PREFIXES openssl/ TARGETS OpenSSL::SSL OpenSSL::Crypto)
pagedserve_third_party(icu PREFIXES unicode/ TARGETS PkgConfig::ICU)
pagedserve_third_party(pcre2 PREFIXES pcre2 TARGETS PkgConfig::PCRE2)

# Ids, requests, checks, UTF-8: what every layer may name.
pagedserve_layer(base FILES src/check.cpp src/model/step_batch.cpp include/pagedserve/*.hpp
  THIRD_PARTY spdlog icu)  # icu: utf8.hpp decodes with U8_NEXT
pagedserve_layer(config FILES src/config/* include/pagedserve/config.hpp
  USES base THIRD_PARTY simdjson)
# How weights are stored: dtypes, ggml's blocks and their codecs, GGUF and safetensors files. Kernels
# and tokenizers read them, so they sit below both (files of src/model, by name).
pagedserve_layer(formats
  FILES src/model/weight.cpp src/model/ggml_*.cpp src/model/ggml_block_formats.hpp src/model/gguf_reader.cpp
    src/model/gguf_split.cpp src/model/safetensors_reader.cpp src/model/mapped_file.cpp
    src/kernels/block_formats.hpp  # ggml's block structs, which the codecs fill and the kernels read
    include/pagedserve/weight.hpp src/model/ggml_blocks.hpp src/model/ggml_block_panels.hpp src/model/gguf.hpp
    src/model/gguf_split.hpp
    src/model/safetensors.hpp src/model/mapped_file.hpp
  USES base THIRD_PARTY simdjson)
pagedserve_layer(kernels FILES src/kernels/* include/pagedserve/kernels.hpp
  USES base formats THIRD_PARTY tbb)
pagedserve_layer(kv FILES src/kv/*
  USES base formats kernels)
pagedserve_layer(sampling FILES src/sampling/* include/pagedserve/sampling.hpp
  USES base)
# Speculative decoding's proposers (n-gram prompt lookup): what the scheduler asks to have verified.
pagedserve_layer(spec FILES src/spec/*
  USES base)
pagedserve_layer(tokenizer FILES src/tokenizer/*
  USES base formats THIRD_PARTY simdjson pcre2 icu spdlog)
# Constrained decoding: GBNF, JSON Schema and regex compiled to byte grammars, and the token masks
# the sampler applies (a sampling token_constraint over a tokenizer's vocabulary).
pagedserve_layer(grammar FILES src/grammar/*
  USES base sampling tokenizer THIRD_PARTY simdjson icu)  # icu: through utf8.hpp
pagedserve_layer(chat FILES src/chat/*
  USES base tokenizer THIRD_PARTY simdjson icu)  # icu: through utf8.hpp
pagedserve_layer(hub FILES src/hub/*
  USES base formats THIRD_PARTY asio beast openssl simdjson spdlog)
# Models: loaders, forward pass, quantization, and the served model (weights + tokenizer + chat
# template, fetched from the hub when asked).
pagedserve_layer(model
  FILES src/model/* include/pagedserve/model.hpp
  USES base config formats kernels kv sampling tokenizer chat hub THIRD_PARTY tbb simdjson spdlog)
pagedserve_layer(sched
  FILES src/sched/*
  USES base formats kernels kv sampling spec)  # the step allocates from the block manager (kv)
pagedserve_layer(metrics FILES src/metrics/*
  USES base)
# The wire formats, and the engine's interface the network layer talks to (engine_api: submit,
# cancel, status, vocabulary, model card; its requests, events and typed errors).
pagedserve_layer(api
  FILES src/api/* include/pagedserve/engine_api.hpp
    include/pagedserve/engine_error.hpp include/pagedserve/engine_status.hpp include/pagedserve/client_link.hpp
    include/pagedserve/generate_command.hpp include/pagedserve/generation_events.hpp
  USES base sampling tokenizer grammar metrics THIRD_PARTY simdjson icu)  # icu: through utf8.hpp
pagedserve_layer(actors FILES actors/*
  USES base config formats kernels kv sampling spec tokenizer grammar chat model sched metrics api THIRD_PARTY asio tbb spdlog)
pagedserve_layer(net FILES src/net/*
  USES base config sampling tokenizer metrics api actors THIRD_PARTY asio beast spdlog icu)  # icu: through utf8.hpp
# The program: main(), flag parsing, the offline tools.
pagedserve_layer(app FILES src/*.cpp src/*.hpp PROGRAM_SOURCES src/main.cpp
  USES base config formats kernels kv sampling spec tokenizer grammar chat hub model sched metrics api actors net
  THIRD_PARTY asio tbb spdlog)
# Known violations, each being removed by other work: empty this list as that work lands.
# gguf_tokenizer_from and gguf_chat_template are declared in the model's gguf_model.hpp though the
# tokenizer implements them: a tokenizer header of their own ends this tokenizer <-> model cycle.
pagedserve_layer_allow(tokenizer src/model/gguf_model.hpp)
