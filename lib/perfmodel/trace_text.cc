// trace_text.cc - a trace's text, a piece at a time (trace_text.h).
#include "perfmodel/trace_text.h"

#include <fmt/format.h>
#include <sys/stat.h>
// zlib's next_in as a pointer to const: inflate never writes its input.
#define ZLIB_CONST
#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <utility>

#include "util/errno_text.h"

namespace dxpu::perfmodel {
namespace trace_text_detail {

struct FileCloser {
  void operator()(std::FILE* file) const { std::fclose(file); }
};
using File = std::unique_ptr<std::FILE, FileCloser>;

}  // namespace trace_text_detail

using trace_text_detail::File;

namespace {

constexpr size_t kPiece = size_t{64} << 10;

bool IsGzip(std::span<const uint8_t> bytes) {
  return bytes.size() >= 2 && bytes[0] == 0x1f && bytes[1] == 0x8b;
}

std::string LargerThanLimit(uint64_t max_bytes) {
  return fmt::format("file larger than the limit of {} bytes", max_bytes);
}

}  // namespace

// The raw input, a piece at a time.
class TraceText::Input {
 public:
  virtual ~Input() = default;
  // The next piece (valid until the next call); empty at the end, or on a problem (then set).
  virtual std::span<const uint8_t> Next() = 0;
  std::optional<std::string> problem;
};

class TraceText::MemoryInput final : public Input {
 public:
  explicit MemoryInput(std::span<const uint8_t> bytes) : bytes_(bytes) {}
  std::span<const uint8_t> Next() override {
    const std::span<const uint8_t> piece = bytes_.first(std::min(bytes_.size(), kPiece));
    bytes_ = bytes_.subspan(piece.size());
    return piece;
  }

 private:
  std::span<const uint8_t> bytes_;
};

class TraceText::FileInput final : public Input {
 public:
  FileInput(File file, uint64_t max_bytes)
      : file_(std::move(file)), max_bytes_(max_bytes), piece_(kPiece) {}
  std::span<const uint8_t> Next() override {
    if (problem || !file_) return {};
    const size_t got = std::fread(piece_.data(), 1, piece_.size(), file_.get());
    const int error = errno;
    read_ += got;
    if (read_ > max_bytes_) {
      problem = LargerThanLimit(max_bytes_);
      return {};
    }
    if (got == 0 && std::ferror(file_.get())) {
      problem = fmt::format("cannot read: {}", util::ErrnoText(error));
      return {};
    }
    return {piece_.data(), got};
  }

 private:
  File file_;
  uint64_t max_bytes_;
  uint64_t read_ = 0;
  std::vector<uint8_t> piece_;
};

// Gunzips the input as the reader asks for text.
class TraceText::Inflater {
 public:
  Inflater() : out_(kPiece) {}
  ~Inflater() {
    if (started_) inflateEnd(&stream_);
  }
  Inflater(const Inflater&) = delete;
  Inflater& operator=(const Inflater&) = delete;
  Inflater(Inflater&&) = delete;
  Inflater& operator=(Inflater&&) = delete;

  // Starts on `first`, the input's first piece (already read to see the gzip magic).
  bool Start(std::span<const uint8_t> first, std::string* problem) {
    if (inflateInit2(&stream_, 16 + MAX_WBITS) != Z_OK) {
      *problem = "zlib cannot start";
      return false;
    }
    started_ = true;
    Feed(first);
    return true;
  }

  // The next piece of text; empty at the end of the last member, or on a problem (then set).
  std::span<const uint8_t> Next(Input& input, std::optional<std::string>* problem) {
    while (true) {
      if (member_done_) {
        // Between members: another gzip member, or the end of the input.
        if (!EnsureInput(input, 2)) {
          if (input.problem) *problem = input.problem;
          if (stream_.avail_in != 0 && !*problem)
            *problem = "data after the end of the gzip stream";
          return {};
        }
        if (!IsGzip(std::span<const uint8_t>(stream_.next_in, stream_.avail_in))) {
          *problem = "data after the end of the gzip stream";
          return {};
        }
        inflateReset(&stream_);
        member_done_ = false;
      }
      if (stream_.avail_in == 0 && !EnsureInput(input, 1)) {
        *problem = input.problem ? *input.problem
                                 : std::string("truncated gzip stream (the input ends inside it)");
        return {};
      }
      stream_.next_out = out_.data();
      stream_.avail_out = static_cast<uInt>(out_.size());
      const int result = inflate(&stream_, Z_NO_FLUSH);
      const size_t produced = out_.size() - stream_.avail_out;
      if (result == Z_STREAM_END) {
        member_done_ = true;
      } else if (result == Z_BUF_ERROR && stream_.avail_in == 0) {
        // No progress for want of input: more is read above.
      } else if (result != Z_OK) {
        *problem = Failure(result);
        return {};
      }
      if (produced != 0) return {out_.data(), produced};
    }
  }

 private:
  void Feed(std::span<const uint8_t> piece) {
    stream_.next_in = piece.data();
    stream_.avail_in = static_cast<uInt>(piece.size());
  }

  // At least n input bytes at next_in (a few bytes of the last piece are carried over into
  // the next); false at the end of the input with fewer.
  bool EnsureInput(Input& input, size_t n) {
    while (stream_.avail_in < n) {
      const std::span<const uint8_t> piece = input.Next();
      if (piece.empty()) return false;
      if (stream_.avail_in == 0) {
        Feed(piece);
        continue;
      }
      std::vector<uint8_t> carried(stream_.next_in, stream_.next_in + stream_.avail_in);
      carried.insert(carried.end(), piece.begin(), piece.end());
      carry_ = std::move(carried);
      Feed(carry_);
    }
    return true;
  }

  std::string Failure(int result) const {
    if (result == Z_MEM_ERROR) return "out of memory inflating the gzip stream";
    const char* detail = stream_.msg != nullptr ? stream_.msg : "invalid data";
    return fmt::format("corrupt gzip stream: {}", detail);
  }

  z_stream stream_{};
  bool started_ = false;
  bool member_done_ = false;
  std::vector<uint8_t> out_;
  std::vector<uint8_t> carry_;
};

std::unique_ptr<TraceText> TraceText::FromMemory(std::span<const uint8_t> bytes,
                                                 uint64_t max_bytes) {
  std::unique_ptr<TraceText> text(new TraceText(std::make_unique<MemoryInput>(bytes), max_bytes));
  if (bytes.size() > max_bytes) text->Fail(LargerThanLimit(max_bytes));
  return text;
}

std::unique_ptr<TraceText> TraceText::FromFile(const std::string& path, uint64_t max_bytes) {
  File file(std::fopen(path.c_str(), "rb"));
  const int error = errno;
  std::optional<std::string> problem;
  struct stat status {};
  if (!file) {
    problem = fmt::format("cannot open: {}", util::ErrnoText(error));
  } else if (fstat(fileno(file.get()), &status) == 0 && S_ISREG(status.st_mode) &&
             static_cast<uint64_t>(status.st_size) > max_bytes) {
    problem = LargerThanLimit(max_bytes);  // known before reading anything
  }
  std::unique_ptr<TraceText> text(
      new TraceText(std::make_unique<FileInput>(std::move(file), max_bytes), max_bytes));
  if (problem) text->Fail(*problem);
  return text;
}

TraceText::TraceText(std::unique_ptr<Input> input, uint64_t max_bytes)
    : input_(std::move(input)), max_bytes_(max_bytes) {}

TraceText::~TraceText() = default;

bool TraceText::Fail(std::string problem) {
  if (!problem_) problem_ = std::move(problem);
  return false;
}

bool TraceText::NextText() {
  if (problem_) return false;
  if (!started_) {
    started_ = true;
    const std::span<const uint8_t> first = input_->Next();
    if (IsGzip(first)) {
      inflater_ = std::make_unique<Inflater>();
      std::string problem;
      if (!inflater_->Start(first, &problem)) return Fail(problem);
    } else {
      text_piece_ = first;
      if (input_->problem) return Fail(*input_->problem);
      text_bytes_ += first.size();
      return !first.empty();
    }
  }
  if (inflater_ != nullptr) {
    text_piece_ = inflater_->Next(*input_, &problem_);
    if (text_piece_.empty()) return false;
    text_bytes_ += text_piece_.size();
    if (text_bytes_ > max_bytes_) {
      return Fail(
          fmt::format("gzip stream inflates to more than the limit of {} bytes", max_bytes_));
    }
    return true;
  }
  text_piece_ = input_->Next();
  if (input_->problem) return Fail(*input_->problem);
  text_bytes_ += text_piece_.size();
  return !text_piece_.empty();
}

TraceText::int_type TraceText::underflow() {
  if (gptr() != egptr()) return traits_type::to_int_type(*gptr());
  if (!NextText()) return traits_type::eof();
  // The parser only reads through the get area: it never writes to it.
  char* begin = reinterpret_cast<char*>(const_cast<uint8_t*>(text_piece_.data()));
  setg(begin, begin, begin + text_piece_.size());
  return traits_type::to_int_type(*gptr());
}

}  // namespace dxpu::perfmodel
