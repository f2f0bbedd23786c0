// The Kineto tokenizer's walker thread (TokenizerOptions::parse_thread_min_bytes): events parsed
// ahead on a second thread reach the callback exactly as when parsed on the calling thread — same
// order, fields, args and strings (escaped ones included, across chunk and batch boundaries) —
// errors still name the file and position, and a callback that throws stops the walker cleanly.
#include <gtest/gtest.h>

#include <tuple>

#include "fleetscope/importers/importers.h"
#include "fleetscope/store/reader.h"
#include "importer_test_util.h"
#include "kineto_tokenizer.h"

namespace fleetscope::importers::test {
namespace {

// Everything the parser reads from an event, as text.
std::string describe(const kineto::RawEvent& ev) {
  std::string s = std::to_string(ev.index) + "@" + std::to_string(ev.offset) + " " +
                  std::string(ev.ph) + "|" + std::string(ev.cat) + "|" + std::string(ev.name) +
                  "|" + std::to_string(ev.ts_ns.value_or(-1)) + "|" +
                  std::to_string(ev.dur_ns.value_or(-1)) + "|" + std::to_string(ev.pid.value) +
                  std::string(ev.pid.text) + "|" + std::to_string(ev.tid.value) +
                  std::string(ev.tid.text);
  const kineto::ArgValue* args[] = {
      &ev.args.device, &ev.args.stream, &ev.args.correlation, &ev.args.external_id,
      &ev.args.grid,   &ev.args.bytes,  &ev.args.meta_name,   &ev.args.est_occupancy};
  for (const kineto::ArgValue* a : args) {
    s += "|" + std::to_string(static_cast<int>(a->kind)) + ":" + std::to_string(a->i) + ":" +
         std::to_string(a->d) + ":" + std::string(a->s) + ":" + std::to_string(a->v[0]);
  }
  return s;
}

std::vector<std::string> walk(const std::string& path, kineto::TokenizerOptions options) {
  kineto::Tokenizer tok(path, options);
  kineto::TraceMeta meta = tok.read_metadata();
  std::vector<std::string> out;
  tok.for_each_event([&](const kineto::RawEvent& ev) { out.push_back(describe(ev)); });
  tok.read_trailing_metadata(meta);
  out.push_back("base " + std::to_string(meta.base_time_ns));
  return out;
}

kineto::TokenizerOptions inline_walk() {
  kineto::TokenizerOptions o;
  o.parse_thread_min_bytes = SIZE_MAX;
  return o;
}

kineto::TokenizerOptions threaded(bool streamed) {
  kineto::TokenizerOptions o;
  o.parse_thread_min_bytes = 0;
  if (streamed) {
    o.batch_bytes = 4096;  // many batches: strings of earlier chunks must outlive later batches
    o.queued_batches = 1;
    o.max_value_bytes = size_t{4} << 20;
    o.whole_document_bytes = 0;
  }
  return o;
}

TEST(KinetoParseThread, SameEventsAsTheCallingThreadOnEverySharedTrace) {
  ASSERT_TRUE(fs::exists(kineto_dir())) << "shared reference data missing: " << kineto_dir();
  int files = 0;
  for (const auto& e : fs::directory_iterator(kineto_dir())) {
    if (e.path().filename().string().find("expected") != std::string::npos) continue;
    SCOPED_TRACE(e.path().string());
    const auto reference = walk(e.path().string(), inline_walk());
    ASSERT_GT(reference.size(), 1u);
    EXPECT_EQ(reference, walk(e.path().string(), threaded(false)));
    EXPECT_EQ(reference, walk(e.path().string(), threaded(true)));
    ++files;
  }
  EXPECT_GE(files, 10);
}

// 5,000 events (more than two hand-off chunks), every name and a string arg spelled with escapes.
std::string escaped_trace(size_t events, const std::string& bad_event = {}) {
  std::string json = R"({"traceEvents": [)";
  for (size_t i = 0; i < events; ++i) {
    if (i) json += ",\n";
    if (!bad_event.empty() && i == events / 2) {
      json += bad_event;
      continue;
    }
    json += R"({"ph": "X", "cat": "cpu_op", "name": "op\")" + std::to_string(i) +
            R"(\u00e9\\n", "pid": 1, "tid": "t\t)" + std::to_string(i % 7) + R"(", "ts": )" +
            std::to_string(i * 10) + R"(.125, "dur": 3, "args": {"name": "a\/)" +
            std::to_string(i) + R"(\\", "External id": )" + std::to_string(i) + "}}";
  }
  return json + R"(], "baseTimeNanoseconds": 1000})";
}

TEST(KinetoParseThread, EscapedStringsStayValidAcrossChunksAndBatches) {
  ScratchDir dir;
  const std::string path = dir.write("escaped.json", escaped_trace(5000));
  const auto reference = walk(path, inline_walk());
  ASSERT_EQ(reference.size(), 5001u);
  EXPECT_NE(reference[4999].find("op\"4999\xc3\xa9\\n"), std::string::npos) << reference[4999];
  EXPECT_NE(reference[4999].find("a/4999\\"), std::string::npos) << reference[4999];
  EXPECT_EQ(reference, walk(path, threaded(false)));
  EXPECT_EQ(reference, walk(path, threaded(true)));
}

TEST(KinetoParseThread, AMalformedEventNamesFileAndPositionAfterTheEventsBeforeIt) {
  ScratchDir dir;
  const std::string path =
      dir.write("bad.json", escaped_trace(5000, R"({"ph": "X", "ts": "soon"})"));
  for (bool streamed : {false, true}) {
    SCOPED_TRACE(streamed ? "streamed" : "whole document");
    size_t seen = 0;
    try {
      kineto::Tokenizer tok(path, threaded(streamed));
      tok.read_metadata();
      tok.for_each_event([&](const kineto::RawEvent&) { ++seen; });
      ADD_FAILURE() << "no error";
    } catch (const InputError& e) {
      const std::string msg = e.what();
      EXPECT_EQ(msg.rfind(path, 0), 0u) << msg;
      EXPECT_NE(msg.find("line 2501"), std::string::npos) << msg;
      EXPECT_NE(msg.find("traceEvents[2500]: field \"ts\" is a string"), std::string::npos) << msg;
    }
    EXPECT_EQ(seen, 2500u);
  }
}

TEST(KinetoParseThread, ACallbackThatThrowsStopsTheWalker) {
  ScratchDir dir;
  const std::string path = dir.write("escaped.json", escaped_trace(5000));
  for (bool streamed : {false, true}) {
    kineto::Tokenizer tok(path, threaded(streamed));
    tok.read_metadata();
    size_t seen = 0;
    EXPECT_THROW(tok.for_each_event([&](const kineto::RawEvent&) {
      if (++seen == 3000) throw std::runtime_error("enough");
    }),
                 std::runtime_error);
    EXPECT_EQ(seen, 3000u);
  }
}

TEST(KinetoParseThread, ImportedRowsAreTheSame) {
  ScratchDir dir;
  const std::string path = dir.write("escaped.json", escaped_trace(5000));
  ImportOptions one_thread, two_threads;
  one_thread.parse_thread_min_bytes = INT64_MAX;
  two_threads.parse_thread_min_bytes = 0;
  import_files({path}, dir.file("one.db"), one_thread);
  import_files({path}, dir.file("two.db"), two_threads);
  const std::string rows =
      "SELECT group_concat(c.start || ' ' || c.end || ' ' || c.globalTid || ' ' || s.value, ';') "
      "FROM (SELECT * FROM cpu_ops ORDER BY start) c JOIN StringIds s ON s.id = c.nameId";
  const auto a = text(store::Reader(dir.file("one.db")), rows);
  ASSERT_TRUE(a.has_value());
  EXPECT_EQ(scalar(store::Reader(dir.file("one.db")), "SELECT count(*) FROM cpu_ops"), 5000);
  EXPECT_EQ(a, text(store::Reader(dir.file("two.db")), rows));
}

}  // namespace
}  // namespace fleetscope::importers::test
