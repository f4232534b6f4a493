/* SPDX-License-Identifier: Apache-2.0 */
/* Numbers from untrusted text: slash-command arguments, command-line flags, environment values,
 * connection strings, a peer's fields. One checked reading for every layer and program, so
 * that "-1" never wraps into a huge count, "10x" is never read as 10, and
 * "99999999999999999999" is never read as the largest number that fits.
 *
 * The whole string is the number, in decimal: digits, with a leading '-' where the type
 * allows one; no '+', no spaces around it, nothing after it (callers trim what their syntax
 * allows). Each call returns 0 with *out set, or ACP_EINVAL with *out unchanged and one
 * sentence in acp_error_last() (acp/error.h) that says what is wrong and quotes the text:
 *
 *   no number given
 *   '10x' is not a whole number
 *   '-1' is out of range: 0 to 10000000
 *
 * The quote holds at most the first 24 bytes of the text, with every byte outside printable
 * ASCII written as \xNN, so the sentence is safe to print on a terminal and to send to a
 * peer; every sentence is shorter than ACP_NUM_WHY bytes.
 *
 * Errors: a negative ACP_E* status, with the sentence in acp_error_last(). */
#ifndef ACP_NUM_H
#define ACP_NUM_H

#include <stddef.h>
#include <stdint.h>

#include "acp/api.h"

ACP_BEGIN_DECLS

#define ACP_NUM_WHY 200

/* A whole number from min to max (inclusive); digits only. */
int acp_parse_u64(const char *s, uint64_t min, uint64_t max, uint64_t *out);

/* A whole number from min to max (inclusive); digits after an optional '-'. */
int acp_parse_i64(const char *s, int64_t min, int64_t max, int64_t *out);

/* A decimal number from min to max (inclusive), such as a number of seconds: "2", "0.5",
 * "1.5e3", "-.25"; an optional '-', digits with at most one '.' (a digit on at least one
 * side), an optional exponent (e or E, an optional sign, digits). No "inf", "nan" or hex
 * floats, and '.' is the decimal point whatever the locale. A number too large for a
 * double is out of range; one too small to tell from zero is read as zero. ACP_ENOMEM when
 * the C locale it reads with cannot be had. */
int acp_parse_double(const char *s, double min, double max, double *out);

ACP_END_DECLS
#endif
