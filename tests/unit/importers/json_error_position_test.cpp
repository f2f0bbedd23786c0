// simdjson reports some malformed JSON (invalid UTF-8, a control character inside a string, a
// string or document cut short) without a position; the importer's error must still name the byte
// where the problem is, on the whole-document and on the streamed reading path alike (both once
// said "byte 0 (line 1)" whatever the file).
#include <gtest/gtest.h>

#include <string>

#include "fleetscope/store/error.h"
#include "importer_test_util.h"
#include "json_error_position.h"
#include "kineto_tokenizer.h"

namespace fleetscope::importers::test {
namespace {

// The error message of reading `json` to the end with the given reading path.
std::string error_of(const std::string& json, bool streamed) {
  ScratchDir dir;
  const std::string in = dir.write("bad.json", json);
  kineto::TokenizerOptions options;
  options.whole_document_bytes = streamed ? 0 : size_t{1} << 30;
  try {
    kineto::Tokenizer tok(in, options);
    kineto::TraceMeta meta = tok.read_metadata();
    tok.for_each_event([](const kineto::RawEvent&) {});
    tok.read_trailing_metadata(meta);
  } catch (const InputError& e) {
    const std::string msg = e.what();
    EXPECT_EQ(msg.rfind(in + ": ", 0), 0u) << msg;
    return msg.substr(in.size() + 2);
  }
  ADD_FAILURE() << "no error for " << json;
  return {};
}

const std::string kHead =
    "{\"traceEvents\": [\n"
    "  {\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"a\", \"pid\": 1, \"tid\": 1, \"ts\": 1, "
    "\"dur\": 1},\n"
    "  {\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"b";
const std::string kTail = "\", \"pid\": 1, \"tid\": 1, \"ts\": 2, \"dur\": 1}\n]}\n";

TEST(JsonErrorPosition, ControlCharacterInAStringIsNamedAtItsByte) {
  const std::string json = kHead + std::string(1, '\0') + kTail;
  const std::string want = "byte " + std::to_string(kHead.size()) + " (line 3): invalid JSON: " +
                           "control character \\u0000 inside a string, expected it escaped";
  for (bool streamed : {false, true})
    EXPECT_EQ(error_of(json, streamed).rfind(want, 0), 0u)
        << (streamed ? "streamed: " : "whole: ") << error_of(json, streamed);
}

TEST(JsonErrorPosition, InvalidUtf8IsNamedAtItsByte) {
  const std::string json = kHead + "ok\xff" + kTail;
  const std::string want = "byte " + std::to_string(kHead.size() + 2) +
                           " (line 3): invalid JSON: this byte is not valid UTF-8";
  for (bool streamed : {false, true})
    EXPECT_EQ(error_of(json, streamed).rfind(want, 0), 0u)
        << (streamed ? "streamed: " : "whole: ") << error_of(json, streamed);
}

TEST(JsonErrorPosition, AFileCutInsideAStringNamesWhereTheStringStarts) {
  const std::string json = kHead + "unfinished name";
  const size_t quote = kHead.size() - 2;  // the opening quote of "b...
  ASSERT_EQ(json[quote], '"');
  EXPECT_EQ(error_of(json, false),
            "byte " + std::to_string(quote) +
                " (line 3): invalid JSON: the string that starts here is never closed (the input "
                "ends at byte " +
                std::to_string(json.size()) + " inside it: a truncated file?)");
}

TEST(JsonErrorPosition, AFileCutBetweenValuesNamesItsEnd) {
  const std::string json = kHead + kTail.substr(0, kTail.find("\"ts\"") + 8);
  EXPECT_EQ(error_of(json, false)
                .rfind("byte " + std::to_string(json.size()) +
                           " (line 3): invalid JSON: the input ends inside an "
                           "object or array",
                       0),
            0u)
      << error_of(json, false);
}

TEST(JsonErrorPosition, BadUtf8InATopLevelValueIsNamedAtItsByte) {
  const std::string head = "{\"deviceProperties\": [{\"name\": \"A100";
  const std::string json = head + "\xc3\x28\"}], \"traceEvents\": []}";
  // The byte (the whole-document reader adds its line; the streamed one reads the value apart).
  const std::string want = "byte " + std::to_string(head.size());
  for (bool streamed : {false, true}) {
    const std::string msg = error_of(json, streamed);
    EXPECT_EQ(msg.rfind(want, 0), 0u) << (streamed ? "streamed: " : "whole: ") << msg;
    EXPECT_TRUE(msg[want.size()] == ' ' || msg[want.size()] == ':') << msg;
    EXPECT_NE(msg.find("not valid UTF-8"), std::string::npos) << msg;
  }
}

TEST(JsonErrorPosition, LocatesOnlyWhatSimdjsonLeavesUnplaced) {
  const std::string text = "[\"a\\\"\x01\"]";  // the escaped quote does not end the string
  auto control = locate_json_error(text.data(), text.size(), simdjson::UNESCAPED_CHARS);
  ASSERT_TRUE(control);
  EXPECT_EQ(control->offset, 5u);
  // Overlong and surrogate encodings are not UTF-8 (RFC 3629).
  for (const std::string bad : {"[\"\xc0\xaf\"]", "[\"\xed\xa0\x80\"]", "[\"\xf4\x90\x80\x80\"]"}) {
    auto utf8 = locate_json_error(bad.data(), bad.size(), simdjson::UTF8_ERROR);
    ASSERT_TRUE(utf8);
    EXPECT_EQ(utf8->offset, 2u);
  }
  const std::string good = "[\"\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80\"]";
  EXPECT_FALSE(locate_json_error(good.data(), good.size(), simdjson::UTF8_ERROR));
  EXPECT_FALSE(locate_json_error(text.data(), text.size(), simdjson::TAPE_ERROR));
}

}  // namespace
}  // namespace fleetscope::importers::test
