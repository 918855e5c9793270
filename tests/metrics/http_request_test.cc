// HttpRequestReader (lib/metrics/http_request.h): request heads whole and byte by byte, line
// endings, every rejection with its status, the size limit at its edge, and random bytes.
#include "metrics/http_request.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "tlp_testutil.h"

namespace dxpu::metrics {
namespace {

using State = HttpRequestReader::State;

const char* const kScrape =
    "GET /metrics?name[]=up HTTP/1.1\r\n"
    "Host: 127.0.0.1:9480\r\n"
    "User-Agent: Prometheus/2.45.0\r\n"
    "Accept:   text/plain;version=0.0.4;q=1  \r\n"
    "\r\n";

TEST(HttpRequestReader, ReadsAScrape) {
  HttpRequestReader r;
  ASSERT_EQ(r.Feed(kScrape), State::kComplete);
  const HttpRequest& req = r.request();
  EXPECT_EQ(req.method, "GET");
  EXPECT_EQ(req.target, "/metrics?name[]=up");
  EXPECT_EQ(req.path(), "/metrics");
  EXPECT_EQ(req.version, "HTTP/1.1");
  ASSERT_EQ(req.headers.size(), 3u);
  EXPECT_EQ(req.headers[0].first, "Host");
  ASSERT_NE(req.header("host"), nullptr);
  EXPECT_EQ(*req.header("HOST"), "127.0.0.1:9480");
  EXPECT_EQ(*req.header("accept"), "text/plain;version=0.0.4;q=1");  // whitespace trimmed
  EXPECT_EQ(req.header("cookie"), nullptr);
}

TEST(HttpRequestReader, ByteByByteGivesTheSameRequest) {
  HttpRequestReader whole;
  ASSERT_EQ(whole.Feed(kScrape), State::kComplete);
  HttpRequestReader r;
  const std::string text = kScrape;
  for (size_t i = 0; i < text.size(); ++i) {
    const State s = r.Feed(text.substr(i, 1));
    EXPECT_EQ(s, i + 1 == text.size() ? State::kComplete : State::kIncomplete) << i;
  }
  EXPECT_EQ(r.request().target, whole.request().target);
  EXPECT_EQ(r.request().headers, whole.request().headers);
}

TEST(HttpRequestReader, LineEndingsAndLeadingBlankLines) {
  HttpRequestReader lf;
  EXPECT_EQ(lf.Feed("GET /healthz HTTP/1.1\nHost: x\n\n"), State::kComplete);
  EXPECT_EQ(lf.request().path(), "/healthz");
  HttpRequestReader leading;
  EXPECT_EQ(leading.Feed("\r\n\nGET / HTTP/1.0\r\n\r\n"), State::kComplete);
  EXPECT_EQ(leading.request().method, "GET");
  EXPECT_EQ(leading.request().version, "HTTP/1.0");  // no Host needed in 1.0
}

TEST(HttpRequestReader, BytesAfterTheHeadAreIgnored) {
  HttpRequestReader r;
  EXPECT_EQ(r.Feed("GET / HTTP/1.1\r\nHost: x\r\n\r\nGET /other HTTP/1.1\r\n"), State::kComplete);
  EXPECT_EQ(r.Feed("garbage"), State::kComplete);
  EXPECT_EQ(r.request().target, "/");
}

TEST(HttpRequestReader, Rejections) {
  struct Case {
    std::string head;
    int status;
  };
  const std::vector<Case> cases = {
      {"GET /\r\nHost: x\r\n\r\n", 400},                               // no version
      {"GET  / HTTP/1.1\r\nHost: x\r\n\r\n", 400},                     // two spaces
      {"GET / HTTP/1.1 \r\nHost: x\r\n\r\n", 400},                     // trailing space
      {"G@T / HTTP/1.1\r\nHost: x\r\n\r\n", 400},                      // method not a token
      {"GET /a\x7f HTTP/1.1\r\nHost: x\r\n\r\n", 400},                 // DEL in the target
      {"GET /a\rb HTTP/1.1\r\nHost: x\r\n\r\n", 400},                  // bare CR in the target
      {"GET / HTTX/1.1\r\nHost: x\r\n\r\n", 400},                      // not HTTP
      {"GET / HTTP/1\r\nHost: x\r\n\r\n", 400},                        // not a version
      {"GET / HTTP/2.0\r\nHost: x\r\n\r\n", 505},                      // HTTP, not 1.x
      {"GET / HTTP/0.9\r\nHost: x\r\n\r\n", 505},                      //
      {"GET / HTTP/1.1\r\nHost x\r\n\r\n", 400},                       // no colon
      {"GET / HTTP/1.1\r\nHost : x\r\n\r\n", 400},                     // space before the colon
      {"GET / HTTP/1.1\r\n: x\r\nHost: x\r\n\r\n", 400},               // empty name
      {"GET / HTTP/1.1\r\nHost: x\r\n folded\r\n\r\n", 400},           // obsolete line folding
      {std::string("GET / HTTP/1.1\r\nHost: x\0y\r\n\r\n", 29), 400},  // NUL in a value
      {"GET / HTTP/1.1\r\nX: a\x01\r\nHost: x\r\n\r\n", 400},          // control character
      {"GET / HTTP/1.1\r\n\r\n", 400},                                 // HTTP/1.1 without Host
      {"GET / HTTP/1.1\r\nHost: a\r\nhost: b\r\n\r\n", 400},           // two Hosts
  };
  for (const Case& c : cases) {
    HttpRequestReader r;
    EXPECT_EQ(r.Feed(c.head), State::kError) << c.head;
    EXPECT_EQ(r.error_status(), c.status) << c.head;
    EXPECT_FALSE(r.error().empty());
    EXPECT_EQ(r.Feed("GET / HTTP/1.1\r\nHost: x\r\n\r\n"), State::kError);  // stays an error
  }
}

// A head of exactly the limit is read; one byte more is 431, however it arrives.
TEST(HttpRequestReader, SizeLimit) {
  const std::string start = "GET / HTTP/1.1\r\nHost: x\r\nX-Pad: ";
  const std::string end = "\r\n\r\n";
  const size_t limit = 256;
  const std::string exact = start + std::string(limit - start.size() - end.size(), 'p') + end;
  ASSERT_EQ(exact.size(), limit);
  HttpRequestReader fits(limit);
  EXPECT_EQ(fits.Feed(exact), State::kComplete);
  EXPECT_EQ(fits.request().header("x-pad")->size(), limit - start.size() - end.size());

  const std::string over = start + std::string(limit + 1 - start.size() - end.size(), 'p') + end;
  HttpRequestReader whole(limit);
  EXPECT_EQ(whole.Feed(over), State::kError);
  EXPECT_EQ(whole.error_status(), 431);
  HttpRequestReader pieces(limit);
  State s = State::kIncomplete;
  for (size_t i = 0; i < over.size() && s == State::kIncomplete; i += 7)
    s = pieces.Feed(over.substr(i, 7));
  EXPECT_EQ(s, State::kError);
  EXPECT_EQ(pieces.error_status(), 431);

  // A head that never ends, 8 KiB by default.
  HttpRequestReader endless;
  for (int i = 0; i < 8 && endless.state() == State::kIncomplete; ++i) {
    endless.Feed(std::string(1024, 'a'));
  }
  EXPECT_EQ(endless.state(), State::kError);
  EXPECT_EQ(endless.error_status(), 431);
}

// Random bytes, sometimes behind a valid request line: never a crash, always a defined state;
// a completed request holds only what the rules allow.
TEST(HttpRequestReader, RandomBytes) {
  const uint64_t seed = dxpu::test::test_seed();
  std::printf("DXPU_SEED=%llu\n", static_cast<unsigned long long>(seed));
  std::mt19937_64 rng(seed);
  const std::string alphabet = std::string("GET /HTP1.:\r\n \tHost") + '\0' + "\x7f\xff";
  for (int i = 0; i < 3000; ++i) {
    std::string bytes = (rng() & 1) != 0 ? "GET / HTTP/1.1\r\n" : "";
    for (int k = static_cast<int>(rng() % 300); k > 0; --k) {
      bytes += (rng() & 3) != 0 ? alphabet[rng() % alphabet.size()] : static_cast<char>(rng());
    }
    HttpRequestReader r(256);
    State s = State::kIncomplete;
    for (size_t at = 0; at < bytes.size() && s == State::kIncomplete;) {
      const size_t n = 1 + rng() % 40;
      s = r.Feed(std::string_view(bytes).substr(at, n));
      at += n;
    }
    if (s == State::kError) {
      EXPECT_TRUE(r.error_status() == 400 || r.error_status() == 431 || r.error_status() == 505)
          << "seed=" << seed;
    } else if (s == State::kComplete) {
      EXPECT_TRUE(r.request().version == "HTTP/1.1" || r.request().version == "HTTP/1.0");
      for (const auto& [name, value] : r.request().headers) {
        EXPECT_FALSE(name.empty()) << "seed=" << seed;
        EXPECT_EQ(value.find_first_of("\r\n"), std::string::npos) << "seed=" << seed;
      }
    }
  }
}

}  // namespace
}  // namespace dxpu::metrics
