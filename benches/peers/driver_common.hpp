// What pf_driver.cpp and sbf_driver.cpp share: the splitmix64 key stream (the same as the
// `peers` example's), the clock, sizes on the command line, and the median and range of rates.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <string>
#include <vector>

namespace peers {

// One step of splitmix64 (Steele, Lea, Flood), the generator of every key.
inline uint64_t splitmix(uint64_t &state) {
    state += 0x9e3779b97f4a7c15ull;
    uint64_t z = state;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

// Wall time, or with --clock cpu the process's CPU time (one thread only: on a machine shared
// with other jobs it leaves out the time the thread waits for a core).
inline bool g_cpu_clock = false;

inline double now_s() {
    if (g_cpu_clock) {
        timespec ts{};
        clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
        return double(ts.tv_sec) + 1e-9 * double(ts.tv_nsec);
    }
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// A size on the command line: digits, then K, M or G; exits with status 2 naming `flag` else.
inline size_t parse_size(const char *prog, const char *flag, const char *s) {
    char *end = nullptr;
    unsigned long long v = strtoull(s, &end, 10);
    size_t mul = 1;
    if (*end == 'K' || *end == 'k') mul = size_t(1) << 10;
    else if (*end == 'M' || *end == 'm') mul = size_t(1) << 20;
    else if (*end == 'G' || *end == 'g') mul = size_t(1) << 30;
    if (end == s || (*end && end[1]) || (*end && mul == 1)) {
        fprintf(stderr, "%s: %s: cannot read %s as a size (digits, then K, M or G)\n", prog, flag, s);
        exit(2);
    }
    return size_t(v) * mul;
}

// The value after flag argv[i] (advancing i); exits with status 2 where there is none.
inline const char *next_value(const char *prog, int argc, char **argv, int &i) {
    if (i + 1 >= argc) {
        fprintf(stderr, "%s: %s needs a value\n", prog, argv[i]);
        exit(2);
    }
    return argv[++i];
}

// --clock wall|cpu; exits with status 2 on another value.
inline void set_clock(const char *prog, const char *value) {
    std::string c = value;
    if (c != "cpu" && c != "wall") {
        fprintf(stderr, "%s: --clock is wall or cpu, not %s\n", prog, value);
        exit(2);
    }
    g_cpu_clock = c == "cpu";
}

struct Stats {
    double med, lo, hi;
};

// Median, smallest and largest of the rates.
inline Stats summarize(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return {v[v.size() / 2], v.front(), v.back()};
}

}  // namespace peers
