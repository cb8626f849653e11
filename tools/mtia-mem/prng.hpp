// The generator's random numbers: xoshiro256** seeded through splitmix64, and
// our own range reduction. The standard distributions leave their algorithms
// to the library, so with them a seed could give another trace elsewhere;
// with these it gives the same trace on every platform.
#pragma once

#include <cstdint>

namespace mtia::mem {

class Prng {
public:
    explicit Prng(uint64_t seed) {
        for (uint64_t& s : s_) {
            seed += 0x9e3779b97f4a7c15ull;
            uint64_t z = seed;
            z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
            z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
            s = z ^ (z >> 31);
        }
    }

    uint64_t next() {
        const uint64_t result = rotl(s_[1] * 5, 7) * 9;
        const uint64_t t = s_[1] << 17;
        s_[2] ^= s_[0];
        s_[3] ^= s_[1];
        s_[1] ^= s_[2];
        s_[0] ^= s_[3];
        s_[2] ^= t;
        s_[3] = rotl(s_[3], 45);
        return result;
    }

    // lo..hi inclusive (multiply-high reduction: a bias of at most (hi-lo+1)/2^64, nothing a trace
    // notices).
    uint64_t uniform(uint64_t lo, uint64_t hi) {
        const uint64_t span = hi - lo + 1;
        if (span == 0) return next();  // the whole 64-bit range
        return lo + static_cast<uint64_t>((static_cast<unsigned __int128>(next()) * span) >> 64);
    }

    // True with probability p.
    bool chance(double p) { return static_cast<double>(next() >> 11) * 0x1p-53 < p; }

private:
    static uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
    uint64_t s_[4];
};

}  // namespace mtia::mem
