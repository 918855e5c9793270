// Tests for the fault spec's quantities: exact decimal durations, bit rates and bytes.
#include "sim/units.h"

#include <gtest/gtest.h>

#include <string>

namespace dxpu::sim {
namespace {

uint64_t Duration(const char* text) {
  const Quantity q = ParseDuration(text);
  EXPECT_TRUE(q.ok()) << text << ": " << q.error;
  return q.value.value_or(0);
}

std::string DurationError(const char* text) {
  const Quantity q = ParseDuration(text);
  EXPECT_FALSE(q.ok()) << text;
  return q.error;
}

TEST(Units, Durations) {
  EXPECT_EQ(Duration("0ns"), 0U);
  EXPECT_EQ(Duration("7ns"), 7U);
  EXPECT_EQ(Duration("10us"), 10'000U);
  EXPECT_EQ(Duration("1.5ms"), 1'500'000U);
  EXPECT_EQ(Duration("0.1us"), 100U);  // exact, no floating point
  EXPECT_EQ(Duration("2s"), 2'000'000'000U);
  EXPECT_EQ(Duration("0.000000001s"), 1U);
  EXPECT_EQ(Duration("18446744073709551614ns"), 18446744073709551614ULL);
}

TEST(Units, BadDurationsSayWhy) {
  EXPECT_NE(DurationError("10").find("no time unit"), std::string::npos);
  EXPECT_NE(DurationError("10xs").find("unknown time unit 'xs'"), std::string::npos);
  EXPECT_NE(DurationError("10MS").find("unknown time unit"), std::string::npos);
  EXPECT_NE(DurationError("ms").find("not a number"), std::string::npos);
  EXPECT_NE(DurationError("").find("not a number"), std::string::npos);
  EXPECT_NE(DurationError("-1ms").find("not a number"), std::string::npos);
  EXPECT_NE(DurationError("1.2.3ms").find("not a number"), std::string::npos);
  EXPECT_NE(DurationError(".ms").find("not a number"), std::string::npos);
  EXPECT_NE(DurationError("0.5ns").find("whole number of nanoseconds"), std::string::npos);
  EXPECT_NE(DurationError("18446744073709551615ns").find("too large"), std::string::npos);
  EXPECT_NE(DurationError("99999999999s").find("too large"), std::string::npos);
  EXPECT_NE(DurationError("1234567890123456789012345678901ns").find("too many digits"),
            std::string::npos);
}

TEST(Units, BitRates) {
  EXPECT_EQ(ParseBitRate("100g").value, 100'000'000'000U);
  EXPECT_EQ(ParseBitRate("2.5g").value, 2'500'000'000U);
  EXPECT_EQ(ParseBitRate("40m").value, 40'000'000U);
  EXPECT_EQ(ParseBitRate("9600").value, 9600U);
  EXPECT_EQ(ParseBitRate("64k").value, 64'000U);
  EXPECT_EQ(ParseBitRate("0").value, 0U);
  EXPECT_NE(ParseBitRate("10x").error.find("unknown bandwidth unit 'x'"), std::string::npos);
  EXPECT_NE(ParseBitRate("10gbps").error.find("unknown bandwidth unit"), std::string::npos);
  EXPECT_NE(ParseBitRate("g").error.find("not a number"), std::string::npos);
  EXPECT_NE(ParseBitRate("0.5").error.find("whole number of bits/s"), std::string::npos);
}

TEST(Units, Bytes) {
  EXPECT_EQ(ParseBytes("65536").value, 65536U);
  EXPECT_NE(ParseBytes("64k").error.find("whole number of bytes"), std::string::npos);
  EXPECT_NE(ParseBytes("1.5").error.find("whole number of bytes"), std::string::npos);
  EXPECT_FALSE(ParseBytes("").ok());
}

TEST(Units, FormatUsesTheLargestExactUnit) {
  EXPECT_EQ(FormatDuration(0), "0ns");
  EXPECT_EQ(FormatDuration(1500), "1500ns");
  EXPECT_EQ(FormatDuration(10'000), "10us");
  EXPECT_EQ(FormatDuration(3 * kSecond), "3s");
  EXPECT_EQ(FormatDuration(2500 * kMillisecond), "2500ms");
  EXPECT_EQ(FormatBitRate(0), "0");
  EXPECT_EQ(FormatBitRate(100'000'000'000), "100g");
  EXPECT_EQ(FormatBitRate(1'500'000), "1500k");
  EXPECT_EQ(FormatBitRate(7), "7");
  for (const Nanos d : {Nanos{1}, Nanos{999}, Nanos{1000}, kSecond + 1, kNever - 1}) {
    EXPECT_EQ(ParseDuration(FormatDuration(d)).value, d);
  }
}

}  // namespace
}  // namespace dxpu::sim
