// pf_driver: times build and lookup of the Bloom filters of tum-db/partitioned-filters
// (Schmidt, Bandle, Giceva, VLDB 2021) on random 64-bit keys, the same keys and method as
// the `peers` example (benches/examples/peers), so that the two print comparable CSV rows.
//
// Built by benches/peers/build.sh from a checkout of the peer the user gives; it only includes
// the peer's headers (nothing of the peer is in this repository).
//
//   pf_driver --variant Sectorized256 --keys 67108864 --bytes 1073741824 --threads 1
//             [--partitioned] [--partitions 1024] [--reps 5] [--lookups N] [--fpr-keys M]
//
// Keys (identical in the `peers` example): build keys = splitmix64 stream from state 1; absent keys =
// stream from state 2 (disjoint from stream 1: the states differ by 1 modulo the odd gamma);
// lookups = L/2 build keys (key j*n/(L/2)) and L/2 absent keys, shuffled (Fisher-Yates, splitmix64
// from state 3); extra FPR probes = stream from state 4.
//
// build  : one rep = Filter(s, partitions, T, 4T) + construct(all keys): allocation, zeroing,
//          partitioning and inserting, the library's whole build (its Construct fixture).
// lookup : one rep = count(lookups): 1 thread as the Count fixture; T threads as the MTCount
//          fixture (4T tasks over an MT-disabled filter sharing the built container).
// Checks (untimed): the present half must all be found (else exit 3); FPR is measured on the
// absent half of the lookups plus --fpr-keys more absent keys.
#include <parameter/parameter.hpp>
#include <filter_base.hpp>
#include <bloom/bloom_parameter.hpp>
#include <bloom/bloom_filter.hpp>
#include <task/task_queue.hpp>

#include "driver_common.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <memory>
#include <string>
#include <vector>

#ifndef PF_K
#define PF_K 8
#endif

namespace {

using namespace peers;
constexpr const char *kProg = "pf_driver";

using namespace filters;
using P = parameter::Partitioning;
using MT = parameter::MultiThreading;

uint64_t *alloc_keys(size_t n) {
    size_t bytes = ((n * 8 + 63) / 64) * 64;
    auto *p = static_cast<uint64_t *>(aligned_alloc(64, bytes == 0 ? 64 : bytes));
    if (!p) {
        fprintf(stderr, "pf_driver: cannot allocate %zu keys\n", n);
        exit(2);
    }
    return p;
}

void fill_stream(uint64_t *out, size_t n, uint64_t &state) {
    for (size_t i = 0; i < n; i++) out[i] = splitmix(state);
}

struct Args {
    std::string variant = "Sectorized256";
    bool partitioned = false;
    size_t partitions = 1024;
    size_t keys = size_t(1) << 26;
    size_t bytes = size_t(1) << 30;
    size_t threads = 1;
    size_t reps = 5;
    size_t lookups = 0;  // 0: = keys
    size_t fpr_keys = size_t(1) << 26;
    std::string ops = "build,lookup";
};


// Counts the positives among `n` keys on `threads` threads as the MTCount fixture does (4T tasks,
// each a count() call of the MT-disabled filter), or with one count() call on one thread.
template<typename Fst>
size_t count_keys(Fst &f, uint64_t *data, size_t n, size_t threads) {
    if (threads <= 1) return f.count(data, n);
    task::TaskQueue<MT::Enabled> queue(threads, 4 * threads);
    std::atomic<size_t> total{0};
    size_t length = n;
    for (size_t tasks = queue.get_n_tasks_per_level(); tasks > 0; tasks--) {
        size_t chunk = length / tasks;
        queue.add_task([&f, &total, data, chunk](size_t) { total += f.count(data, chunk); });
        data += chunk;
        length -= chunk;
    }
    queue.execute_tasks();
    return total;
}

template<template<size_t> class FP, P part>
int run(const Args &a, const char *impl_name) {
    constexpr size_t K = PF_K;
    using OPst = parameter::OptimizationParameter<parameter::AddressingMode::Lemire, parameter::HashingMode::Murmur,
            part, parameter::RegisterSize::_64bit, parameter::SIMD::AVX512, MT::Disabled>;
    using OPmt = parameter::OptimizationParameter<parameter::AddressingMode::Lemire, parameter::HashingMode::Murmur,
            part, parameter::RegisterSize::_64bit, parameter::SIMD::AVX512, MT::Enabled>;
    using Fst = Filter<FilterType::Bloom, FP<K>, K, OPst>;
    using Fmt = Filter<FilterType::Bloom, FP<K>, K, OPmt>;

    // bits per key = k * s / 100 (BloomContainer): s for the asked bytes and keys.
    const double bits_per_key = 8.0 * double(a.bytes) / double(a.keys);
    const size_t s = size_t(bits_per_key * 100.0 / double(K) + 0.5);
    const size_t n_part = part == P::Enabled ? a.partitions : 1;
    const size_t L = a.lookups ? a.lookups : a.keys;

    uint64_t st = 1;
    uint64_t *keys = alloc_keys(a.keys);
    fill_stream(keys, a.keys, st);
    uint64_t *look = alloc_keys(L);
    // Present half: key (j * n) / (L/2), spread over the whole build set.
    auto present_key = [&](size_t j) { return keys[size_t((unsigned __int128)j * a.keys / (L / 2))]; };
    for (size_t j = 0; j < L / 2; j++) look[j] = present_key(j);
    st = 2;
    fill_stream(look + L / 2, L - L / 2, st);
    st = 3;
    for (size_t i = L; i > 1; i--) std::swap(look[i - 1], look[splitmix(st) % i]);

    auto fst = std::make_unique<Fst>(s, n_part, 1, 4);
    size_t filter_bytes = 0;
    const bool do_build = a.ops.find("build") != std::string::npos;
    const bool do_lookup = a.ops.find("lookup") != std::string::npos;
    auto build_once = [&]() -> double {
        double t0, t1;
        if (a.threads <= 1) {
            fst.reset();
            fst = std::make_unique<Fst>(s, n_part, 1, 4);
            t0 = now_s();
            fst->construct(keys, a.keys);
            t1 = now_s();
        } else {
            fst.reset();
            auto fmt = std::make_unique<Fmt>(s, n_part, a.threads, 4 * a.threads);
            t0 = now_s();
            fmt->construct(keys, a.keys);
            t1 = now_s();
            // Lookups go through an MT-disabled filter over the same container, as MTCount does.
            fst = std::make_unique<Fst>(s, n_part, 1, 4);
            fst->container = std::move(fmt->container);
            fst->n_partitions = fmt->n_partitions;
        }
        filter_bytes = fst->size();
        return t1 - t0;
    };

    std::vector<double> build_rates;
    for (size_t r = 0; r < (do_build ? a.reps : 1); r++) {
        double t = build_once();
        build_rates.push_back(double(a.keys) / t / 1e6);
    }

    // Untimed checks: every present key is found; false positives among absent keys.
    {
        uint64_t *present = alloc_keys(L / 2);
        for (size_t j = 0; j < L / 2; j++) present[j] = present_key(j);
        size_t found = count_keys(*fst, present, L / 2, a.threads);
        free(present);
        if (found != L / 2) {
            fprintf(stderr, "pf_driver: %s found %zu of %zu present keys (false negatives)\n", impl_name, found,
                    L / 2);
            return 3;
        }
    }
    size_t fp = 0, probes = 0;
    {
        size_t positives = count_keys(*fst, look, L, a.threads);
        fp += positives - L / 2;
        probes += L - L / 2;
        const size_t chunk = size_t(1) << 24;
        uint64_t *extra = alloc_keys(std::min(chunk, a.fpr_keys));
        uint64_t st4 = 4;
        for (size_t done = 0; done < a.fpr_keys; done += chunk) {
            size_t m = std::min(chunk, a.fpr_keys - done);
            fill_stream(extra, m, st4);
            fp += count_keys(*fst, extra, m, a.threads);
            probes += m;
        }
        free(extra);
    }
    const double fpr = double(fp) / double(probes);

    std::vector<double> look_rates;
    if (do_lookup) {
        for (size_t r = 0; r < a.reps; r++) {
            double t0 = now_s();
            size_t c = count_keys(*fst, look, L, a.threads);
            double t1 = now_s();
            if (c < L / 2) {
                fprintf(stderr, "pf_driver: lookup rep found %zu < %zu\n", c, L / 2);
                return 3;
            }
            look_rates.push_back(double(L) / (t1 - t0) / 1e6);
        }
    }

    std::string impl = std::string("pf-") + impl_name + (part == P::Enabled ? "-part" + std::to_string(n_part) : "");
    auto row = [&](const char *op, const std::vector<double> &rates) {
        Stats x = summarize(rates);
        printf("%s,%s,%zu,%zu,%zu,%.2f,%.2f,%.2f,%.3e,%zu,k=%zu s=%zu reps=%zu lemire murmur avx512 %s\n",
               impl.c_str(), op, filter_bytes, a.keys, a.threads, x.med, x.lo, x.hi, fpr, probes, K, s,
               rates.size(), g_cpu_clock ? "cpu-clock" : "wall-clock");
    };
    if (do_build) row("build", build_rates);
    if (do_lookup) row("lookup", look_rates);
    fflush(stdout);
    free(keys);
    free(look);
    return 0;
}

template<P part>
int dispatch(const Args &a) {
    namespace B = filters::bloom;
    const std::string &v = a.variant;
    if (v == "Blocked64") return run<B::Blocked64, part>(a, "Blocked64");
    if (v == "Blocked512") return run<B::Blocked512, part>(a, "Blocked512");
    if (v == "Sectorized256") return run<B::Sectorized256, part>(a, "Sectorized256");
    if (v == "Sectorized512") return run<B::Sectorized512, part>(a, "Sectorized512");
    if (v == "Grouped2") return run<B::Grouped2, part>(a, "Grouped2");
    if (v == "Grouped4") return run<B::Grouped4, part>(a, "Grouped4");
    fprintf(stderr, "pf_driver: unknown --variant %s (Blocked64, Blocked512, Sectorized256, Sectorized512, "
                    "Grouped2, Grouped4)\n", v.c_str());
    return 2;
}


}  // namespace

int main(int argc, char **argv) {
    Args a;
    for (int i = 1; i < argc; i++) {
        std::string f = argv[i];
        auto val = [&]() { return next_value(kProg, argc, argv, i); };
        if (f == "--variant") a.variant = val();
        else if (f == "--partitioned") a.partitioned = true;
        else if (f == "--partitions") a.partitions = parse_size(kProg, "--partitions", val());
        else if (f == "--keys") a.keys = parse_size(kProg, "--keys", val());
        else if (f == "--bytes") a.bytes = parse_size(kProg, "--bytes", val());
        else if (f == "--threads") a.threads = parse_size(kProg, "--threads", val());
        else if (f == "--reps") a.reps = parse_size(kProg, "--reps", val());
        else if (f == "--lookups") a.lookups = parse_size(kProg, "--lookups", val());
        else if (f == "--fpr-keys") a.fpr_keys = parse_size(kProg, "--fpr-keys", val());
        else if (f == "--ops") a.ops = val();
        else if (f == "--clock") set_clock(kProg, val());
        else if (f == "--header") {
            printf("implementation,op,filter_bytes,keys,threads,mkeys_s_median,mkeys_s_min,mkeys_s_max,"
                   "fpr_measured,fpr_probes,notes\n");
            return 0;
        } else {
            fprintf(stderr, "pf_driver: unknown argument %s\n", f.c_str());
            return 2;
        }
    }
    if (a.keys < 2 || a.reps < 1 || a.threads < 1 || a.bytes < 64) {
        fprintf(stderr, "pf_driver: need --keys >= 2, --reps >= 1, --threads >= 1, --bytes >= 64\n");
        return 2;
    }
    if (g_cpu_clock && a.threads > 1) {
        fprintf(stderr, "pf_driver: --clock cpu times one thread only (it sums all threads' CPU time)\n");
        return 2;
    }
    if (a.partitions == 0 || (a.partitions & (a.partitions - 1)) != 0) {
        fprintf(stderr, "pf_driver: --partitions must be a power of two, not %zu\n", a.partitions);
        return 2;
    }
    if (!__builtin_cpu_supports("avx512f") || !__builtin_cpu_supports("avx512bw") ||
        !__builtin_cpu_supports("avx512dq") || !__builtin_cpu_supports("avx512vl")) {
        fprintf(stderr, "pf_driver: this build uses AVX-512 (F, BW, DQ, VL), which this CPU lacks\n");
        return 2;
    }
    return a.partitioned ? dispatch<P::Enabled>(a) : dispatch<P::Disabled>(a);
}
