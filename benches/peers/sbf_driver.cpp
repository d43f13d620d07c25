// sbf_driver: times inserts and class lookups of libSBF (the reference C++ spatial Bloom filter of
// Palmieri, Calderoni and Maio) on random 64-bit keys, the same keys, classes and method as
// the `peers` example's `spatial` command, and measures per-class false-positive and emersion rates.
//
// Built by benches/peers/build.sh from a libSBF checkout the user gives (patched copy of its
// sbf.cpp, see libsbf-check-leak.patch); links its sbf.cpp/base64.cpp.
//
//   sbf_driver --keys 1048576 --classes 4 [--cells-per-key 8] [--hashes 8] [--hash-family 4]
//              [--reps 5] [--lookups N] [--salt-dir DIR] [--class-csv FILE]
//
// libSBF as is: each of the k "hashes" is the hash family's digest (1 SHA1, 4 MD4 (its default),
// 5 MD5, via OpenSSL) of the key XOR a 128-byte random salt; the cell index is the top
// log2(cells) bits of the digest's first 4 bytes (little endian). Cells are 2^bit_mapping bytes
// (1 byte for up to 255 classes). Keys are passed as their 8 little-endian bytes.
//
// Keys and classes (identical in the `peers` example): key i = i-th output of splitmix64 from state 1,
// class 1 + i*c/n (ascending, as libSBF's statistics require); lookups = L/2 present keys
// (key (j*n)/(L/2) for j < L/2, all classes evenly) and L/2 absent keys (splitmix64 from state 2),
// shuffled by splitmix64 from state 3.
// insert : one rep = insert all n keys into a fresh, empty filter (allocation untimed).
// lookup : one rep = Check() of the L lookups, one thread (libSBF has no batch or thread API).
#include "sbf.h"

#include "driver_common.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <memory>
#include <string>
#include <sys/stat.h>
#include <vector>

namespace {

using namespace peers;
constexpr const char *kProg = "sbf_driver";



}  // namespace

int main(int argc, char **argv) {
    size_t n = size_t(1) << 20, classes = 4, cells_per_key = 8, hashes = 8, family = 4, reps = 5, lookups = 0;
    std::string salt_dir = ".", class_csv;
    for (int i = 1; i < argc; i++) {
        std::string f = argv[i];
        auto val = [&]() { return next_value(kProg, argc, argv, i); };
        if (f == "--keys") n = parse_size(kProg, "--keys", val());
        else if (f == "--classes") classes = parse_size(kProg, "--classes", val());
        else if (f == "--cells-per-key") cells_per_key = parse_size(kProg, "--cells-per-key", val());
        else if (f == "--hashes") hashes = parse_size(kProg, "--hashes", val());
        else if (f == "--hash-family") family = parse_size(kProg, "--hash-family", val());
        else if (f == "--reps") reps = parse_size(kProg, "--reps", val());
        else if (f == "--lookups") lookups = parse_size(kProg, "--lookups", val());
        else if (f == "--salt-dir") salt_dir = val();
        else if (f == "--class-csv") class_csv = val();
        else if (f == "--clock") set_clock(kProg, val());
        else {
            fprintf(stderr, "sbf_driver: unknown argument %s\n", f.c_str());
            return 2;
        }
    }
    if (n < 2 || reps < 1 || classes < 1 || classes > 255 || hashes < 1 || hashes > 1024 ||
        (family != 1 && family != 4 && family != 5)) {
        fprintf(stderr, "sbf_driver: need --keys >= 2, --reps >= 1, 1 <= --classes <= 255, 1 <= --hashes <= 1024, "
                        "--hash-family 1, 4 or 5\n");
        return 2;
    }
    // libSBF: 2^bit_mapping cells, counted in an int: at most 2^30 one-byte cells.
    int bit_mapping = 0;
    while ((size_t(1) << bit_mapping) < cells_per_key * n) bit_mapping++;
    if (bit_mapping > 30) {
        fprintf(stderr, "sbf_driver: %zu cells per key for %zu keys needs 2^%d cells; libSBF counts cells and "
                        "bytes in an int, so at most 2^30\n", cells_per_key, n, bit_mapping);
        return 2;
    }
    const size_t L = lookups ? lookups : n;
    const size_t half = L / 2;

    std::vector<uint64_t> keys(n);
    std::vector<uint16_t> key_class(n);
    uint64_t st = 1;
    for (size_t i = 0; i < n; i++) {
        keys[i] = splitmix(st);
        key_class[i] = uint16_t(1 + (i * classes) / n);
    }
    std::vector<uint64_t> look(L);
    std::vector<uint16_t> truth(L);  // 0 = absent
    for (size_t j = 0; j < half; j++) {
        size_t i = size_t((unsigned __int128)j * n / half);
        look[j] = keys[i];
        truth[j] = key_class[i];
    }
    st = 2;
    for (size_t j = half; j < L; j++) look[j] = splitmix(st), truth[j] = 0;
    st = 3;
    for (size_t i = L; i > 1; i--) {
        size_t r = splitmix(st) % i;
        std::swap(look[i - 1], look[r]);
        std::swap(truth[i - 1], truth[r]);
    }

    mkdir(salt_dir.c_str(), 0755);
    const std::string salt = salt_dir + "/sbf_salt_f" + std::to_string(family) + "_k" + std::to_string(hashes) + ".txt";

    std::unique_ptr<sbf::SBF> filter;
    std::vector<double> ins;
    for (size_t r = 0; r < reps; r++) {
        filter.reset();
        filter = std::make_unique<sbf::SBF>(bit_mapping, int(family), int(hashes), int(classes), salt);
        double t0 = now_s();
        for (size_t i = 0; i < n; i++) {
            filter->Insert(reinterpret_cast<const char *>(&keys[i]), 8, key_class[i]);
        }
        double t1 = now_s();
        ins.push_back(double(n) / (t1 - t0) / 1e6);
    }

    std::vector<uint16_t> answer(L);
    std::vector<double> lk;
    for (size_t r = 0; r < reps; r++) {
        double t0 = now_s();
        for (size_t j = 0; j < L; j++) {
            answer[j] = uint16_t(filter->Check(reinterpret_cast<const char *>(&look[j]), 8));
        }
        double t1 = now_s();
        lk.push_back(double(L) / (t1 - t0) / 1e6);
    }

    // Per class c: fpr_c = absent keys answered c / absent keys; emersion_c = keys of class c
    // answered c / keys of class c looked up; a present key answered 0 or below its class is an
    // error of the filter (never allowed).
    std::vector<size_t> fp(classes + 1, 0), present(classes + 1, 0), right(classes + 1, 0);
    size_t absent = 0, wrong = 0;
    for (size_t j = 0; j < L; j++) {
        if (truth[j] == 0) {
            absent++;
            fp[answer[j]]++;
        } else {
            present[truth[j]]++;
            if (answer[j] == truth[j]) right[truth[j]]++;
            else if (answer[j] < truth[j]) wrong++;
        }
    }
    if (wrong) {
        fprintf(stderr, "sbf_driver: %zu present keys answered absent or below their class\n", wrong);
        return 3;
    }
    size_t fp_all = 0, right_all = 0, present_all = 0;
    for (size_t c = 1; c <= classes; c++) fp_all += fp[c], right_all += right[c], present_all += present[c];
    filter->SetAreaFpp();
    const size_t bytes = size_t(1) << bit_mapping;
    const char *hname = family == 1 ? "sha1" : family == 5 ? "md5" : "md4";
    auto row = [&](const char *op, const std::vector<double> &v) {
        Stats x = summarize(v);
        printf("libsbf-%s,%s,%zu,%zu,1,%.3f,%.3f,%.3f,%.3e,%zu,classes=%zu cells=2^%d k=%zu emersion=%.4f "
               "reps=%zu %s\n",
               hname, op, bytes, n, x.med, x.lo, x.hi, double(fp_all) / double(absent), absent, classes, bit_mapping,
               hashes, double(right_all) / double(present_all), v.size(), g_cpu_clock ? "cpu-clock" : "wall-clock");
    };
    row("spatial_insert", ins);
    row("spatial_lookup", lk);
    if (!class_csv.empty()) {
        FILE *f = fopen(class_csv.c_str(), "a");
        if (!f) {
            fprintf(stderr, "sbf_driver: cannot open %s for appending\n", class_csv.c_str());
            return 2;
        }
        for (size_t c = 1; c <= classes; c++) {
            fprintf(f, "libsbf-%s,%zu,%zu,%zu,%zu,%.4e,%.6f,%.6f,%.6f\n", hname, n, classes, size_t(1) << bit_mapping,
                    c, double(fp[c]) / double(absent), double(right[c]) / double(present[c]),
                    filter->GetAreaEmersion(int(c)), filter->GetExpectedAreaEmersion(int(c)));
        }
        fclose(f);
    }
    return 0;
}
