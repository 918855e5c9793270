// trace_text.h - a trace's text, a piece at a time: from a file or from memory, gunzipped as it
// is read when it starts with the gzip magic (one member or several, as `cat a.gz b.gz` makes).
// A std::streambuf, so that the JSON parser pulls the text through it: what is held at once is
// one piece of the input and one of the text (64 KiB each), whatever the size of the file
// (issue 35 item 4). Everything in the input is untrusted: the input and the text are each held
// to a byte limit (a gzip bomb stops there), and a truncated, corrupt or trailing-garbage gzip
// stream ends the text with a problem, which the reader reports in place of what the parser
// made of the shortened text.
#ifndef DXPU_LIB_PERFMODEL_TRACE_TEXT_H_
#define DXPU_LIB_PERFMODEL_TRACE_TEXT_H_

#include <cstdint>
#include <cstdio>
#include <memory>
#include <optional>
#include <span>
#include <streambuf>
#include <string>
#include <vector>

namespace dxpu::perfmodel {

class TraceText : public std::streambuf {
 public:
  // The text of `bytes` (which must outlive this).
  static std::unique_ptr<TraceText> FromMemory(std::span<const uint8_t> bytes, uint64_t max_bytes);
  // The text of the file at `path`; a file that cannot be opened, or whose size is over the
  // limit, is a problem from the start (problem() set, no text).
  static std::unique_ptr<TraceText> FromFile(const std::string& path, uint64_t max_bytes);

  ~TraceText() override;
  TraceText(const TraceText&) = delete;
  TraceText& operator=(const TraceText&) = delete;
  TraceText(TraceText&&) = delete;
  TraceText& operator=(TraceText&&) = delete;

  // Why the text ended early ("truncated gzip stream (the input ends inside it)", "file larger
  // than the limit of N bytes", "cannot read: ..."), without the source's name; empty when it
  // did not.
  const std::optional<std::string>& problem() const { return problem_; }
  // Text bytes handed to the reader so far.
  uint64_t text_bytes() const { return text_bytes_; }

 protected:
  int_type underflow() override;

 private:
  class Input;
  class MemoryInput;
  class FileInput;
  class Inflater;

  TraceText(std::unique_ptr<Input> input, uint64_t max_bytes);
  // The next piece of text into text_piece_, or false at the end (problem_ set if early).
  bool NextText();
  bool Fail(std::string problem);

  std::unique_ptr<Input> input_;
  std::unique_ptr<Inflater> inflater_;  // null: the input is the text
  uint64_t max_bytes_;
  uint64_t text_bytes_ = 0;
  bool started_ = false;
  std::span<const uint8_t> text_piece_;
  std::optional<std::string> problem_;
};

}  // namespace dxpu::perfmodel

#endif  // DXPU_LIB_PERFMODEL_TRACE_TEXT_H_
