/*
 * mk_convert.h: element conversions of typed packing (included by driver.c when a
 * typed kernel module defines them as MK_CVT_A / MK_CVT_B). Portable C, no ISA flags:
 * bf16 and fp16 arrive as the uint16_t bit patterns numpy stores (ml_dtypes.bfloat16,
 * numpy.float16).
 *   bf16: the high half of an IEEE binary32 (Google's bfloat16; Intel BF16 spec), so
 *         widening is a shift (exact);
 *   fp16: IEEE 754 binary16 (1 sign, 5 exponent, 10 fraction bits; bias 15), widened
 *         exactly, subnormals, infinities and NaNs included.
 */
#ifndef MK_CONVERT_H
#define MK_CONVERT_H
#include <stdint.h>
#include <string.h>

static inline float mk_bf16_to_f32(uint16_t h)
{
    const uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, 4);
    return f;
}

static inline float mk_f16_to_f32(uint16_t h)
{
    const uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    uint32_t exp = (h >> 10) & 0x1fu, frac = h & 0x3ffu, u;
    if (exp == 0x1fu) {                       /* inf, NaN */
        u = sign | 0x7f800000u | (frac << 13);
    } else if (exp != 0) {                    /* normal: rebias 15 -> 127 */
        u = sign | ((exp + 112u) << 23) | (frac << 13);
    } else if (frac == 0) {                   /* signed zero */
        u = sign;
    } else {                                  /* subnormal: normalise */
        exp = 113u;
        while (!(frac & 0x400u)) {
            frac <<= 1;
            --exp;
        }
        u = sign | (exp << 23) | ((frac & 0x3ffu) << 13);
    }
    float f;
    memcpy(&f, &u, 4);
    return f;
}

#endif
