#include "analyze/part_parser.h"

#include <cstring>

#include "analyze/trace_fields.h"
#include "analyze/trace_reader.h"

namespace ddp {
namespace {

namespace od = simdjson::ondemand;

bool is_blank(char c) { return c == ' ' || c == '\n' || c == '\r' || c == '\t'; }

// An integer as JSON writes it and write_number_text would write it again (no sign of zero,
// no leading zero, fewer than 16 digits), or empty: pids and tids are copied, not converted.
std::string_view plain_integer(std::string_view token) {
  while (!token.empty() && is_blank(token.back())) token.remove_suffix(1);
  const std::string_view digits = token.starts_with('-') ? token.substr(1) : token;
  if (digits.empty() || digits.size() > 15 || (digits[0] == '0' && (digits.size() > 1 || token.size() > 1))) return {};
  for (char c : digits) {
    if (c < '0' || c > '9') return {};
  }
  return token;
}

// True where a number's token (it runs to the next structural character) is in JSON's grammar
// without an exponent, at most 18 digits before any point (so in range for every parser),
// and only blanks follow: checked without converting it. False says only that simdjson must
// parse it to tell.
bool is_plain_number(std::string_view token) {
  std::size_t i = token.starts_with('-') ? 1 : 0;
  const std::size_t first = i;
  while (i < token.size() && token[i] >= '0' && token[i] <= '9') ++i;
  const std::size_t digits = i - first;
  if (digits == 0 || digits > 18 || (token[first] == '0' && digits > 1)) return false;
  if (i < token.size() && token[i] == '.') {
    const std::size_t fraction = ++i;
    while (i < token.size() && token[i] >= '0' && token[i] <= '9') ++i;
    if (i == fraction) return false;
  }
  while (i < token.size() && is_blank(token[i])) ++i;
  return i == token.size();
}

// A string value's text, not copied where it has no escape. Its token runs from its opening
// quote to the next structural character: the closing quote and any blanks after it. Either
// way the value is taken (a string left untaken before a colon would be skipped as a key,
// what follows it unchecked).
std::string_view text_of(od::value& v) {
  std::string_view token = v.raw_json_token();
  while (token.back() != '"') token.remove_suffix(1);
  const std::string_view inner = token.substr(1, token.size() - 2);
  if (std::memchr(inner.data(), '\\', inner.size()) != nullptr) return v.get_string().value();
  (void)v.get_raw_json_string().value();
  return inner;
}

// Calls visit(field) on each field of `object`, by reference: a copy of simdjson's field, made
// just after the stores that built it, stalls on them (store forwarding fails), and that was a
// third of the walk.
template <typename Visit>
void for_each_field(od::object object, Visit&& visit) {
  for (auto it = object.begin(); it != object.end(); ++it) {
    simdjson::simdjson_result<od::field> field = *it;
    if (field.error() != simdjson::SUCCESS) throw simdjson::simdjson_error(field.error());
    visit(field.value_unsafe());
  }
}

// Reads one part, the walk of TraceHandler (trace_reader.cpp) over simdjson's values. Every
// value is read, as the analysis uses it or, where it does not, only to be checked
// (validate): On-Demand would skip it by its brackets alone, and the one pass refuses what
// is not JSON anywhere in a file. Any simdjson error throws simdjson_error, caught by parse().
class PartWalk {
 public:
  explicit PartWalk(ParsedPart& out) : out_(out.file), events_(out.events), maker_(out.file) {}

  bool saw_events = false;
  bool ends_with_null = false;  // the last element of the last events array read was null

  void document(od::document& doc) {
    if (doc.type() == od::json_type::array) {
      out_.dialect = TraceFile::Dialect::kLegacyArray;
      events_open_ = 1;
      events(doc.get_array());
    } else {
      for (od::field f : doc.get_object()) {
        od::value v = f.value();
        if (!top(key_of(f), v)) validate(v, 1);
      }
    }
    // Past the root value, nothing but the end (simdjson 3.0's document has no at_end()).
    if (doc.current_location().error() != simdjson::OUT_OF_BOUNDS) {
      throw simdjson::simdjson_error(simdjson::TRAILING_CONTENT);
    }
  }

 private:
  static bool is_number(od::value& v) { return v.type() == od::json_type::number; }
  static bool is_text(od::value& v) { return v.type() == od::json_type::string; }
  static bool is(od::value& v, od::json_type type) { return v.type() == type; }

  // A field's key, read in place: its raw bytes end at the quote before the colon before the
  // value. Decoded only where it holds an escape (and names no field as it stands).
  static Field key_of(od::field& f) {
    const char* end = f.value().raw_json_token().data();
    while (*--end != ':') {
    }
    while (*--end != '"') {
    }
    const char* begin = f.key().raw();
    const std::string_view raw(begin, static_cast<std::size_t>(end - begin));
    const Field field = field_of(raw);
    if (field != Field::kNone || std::memchr(raw.data(), '\\', raw.size()) == nullptr) return field;
    return field_of(f.unescaped_key().value());
  }

  // A value the analysis does not use, checked as JSON (the one pass refuses what is not),
  // `open` containers around it: nesting deeper than kMaxJsonDepth is refused as there.
  static void validate(od::value v, std::size_t open) {
    const od::json_type type = v.type();
    if ((type == od::json_type::object || type == od::json_type::array) && open >= kMaxJsonDepth) {
      throw simdjson::simdjson_error(simdjson::DEPTH_ERROR);
    }
    switch (type) {
      case od::json_type::object:
        for_each_field(v.get_object(), [&](od::field& f) {
          (void)key_of(f);
          validate(f.value(), open + 1);
        });
        break;
      case od::json_type::array:
        for (od::value e : v.get_array()) validate(e, open + 1);
        break;
      case od::json_type::number:
        if (!is_plain_number(v.raw_json_token())) (void)v.get_number().value();
        break;
      case od::json_type::string:
        (void)text_of(v);
        break;
      case od::json_type::boolean:
        (void)v.get_bool().value();
        break;
      case od::json_type::null:
        if (!v.is_null().value()) throw simdjson::simdjson_error(simdjson::N_ATOM_ERROR);
        break;
    }
  }

  // Each of these reads `v` and returns true where the analysis uses it, else leaves it unread.
  bool top(Field key, od::value& v) {
    switch (key) {
      case Field::kTraceEvents:
        if (!is(v, od::json_type::array)) return false;
        events(v.get_array());
        return true;
      case Field::kDistributedInfo:
        if (!is(v, od::json_type::object)) return false;
        for (od::field f : v.get_object()) {
          od::value value = f.value();
          if (!distributed(key_of(f), value)) validate(value, 2);
        }
        return true;
      case Field::kOtherData:
        if (!is(v, od::json_type::object)) return false;
        for (od::field f : v.get_object()) {
          od::value value = f.value();
          if (key_of(f) == Field::kProducer && is_text(value)) {
            producer_text(text_of(value), out_);
          } else {
            validate(value, 2);
          }
        }
        return true;
      case Field::kHostName:
        if (!is_text(v)) return false;
        out_.host_name = std::string(text_of(v));
        return true;
      case Field::kBaseTime: {
        if (!is_number(v)) return false;
        const double t = v.get_double();
        if (std::isfinite(t)) out_.base_time_ns = t;
        return true;
      }
      default:
        return false;
    }
  }

  bool distributed(Field key, od::value& v) {
    if (is_number(v)) {
      distributed_number(key, v.get_double(), out_);
      return true;
    }
    if (is_text(v)) {
      distributed_text(key, text_of(v), out_);
      return true;
    }
    return false;
  }

  void events(od::array array) {
    saw_events = true;
    for (od::value element : array) {
      const od::json_type type = element.type();
      ends_with_null = type == od::json_type::null;
      if (type == od::json_type::object) {
        event(element.get_object());
      } else {
        validate(element, events_open_);
      }
    }
  }

  void event(od::object object) {
    e_.clear();
    for_each_field(object, [&](od::field& f) {
      if (!event_field(key_of(f), f.value())) validate(f.value(), events_open_ + 1);
    });
    if (TraceEvent t; maker_.make(e_, t)) events_.push_back(t);
  }

  bool event_field(Field key, od::value& v) {
    switch (key) {
      case Field::kName:
        return text(v, e_.name);
      case Field::kCat:
        return text(v, e_.category);
      case Field::kPh:
        return text(v, e_.phase);
      case Field::kTs:
        return number(v, e_.ts);
      case Field::kDur:
        return number(v, e_.dur);
      case Field::kPid:
        return scalar_text(v, e_.pid);
      case Field::kTid:
        return scalar_text(v, e_.tid);
      case Field::kArgs:
        if (!is(v, od::json_type::object)) return false;
        for_each_field(v.get_object(), [&](od::field& f) {
          if (!arg(key_of(f), f.value())) validate(f.value(), events_open_ + 2);
        });
        return true;
      default:
        return false;
    }
  }

  bool arg(Field key, od::value& v) {
    switch (key) {
      case Field::kMsgElements:
        return number(v, e_.nelems);
      case Field::kDtype:
        return text(v, e_.collective_dtype);
      case Field::kProcessGroup:
        return scalar_text(v, e_.process_group);
      case Field::kCorrelation: {
        double correlation = 0;
        if (!number(v, correlation)) return false;
        e_.set_correlation(correlation);
        return true;
      }
      case Field::kBytes:
        return number(v, e_.bytes);
      case Field::kInputDims:
        if (!is(v, od::json_type::array)) return false;
        for (od::value element : v.get_array()) {
          if (!input_dims(element)) validate(element, events_open_ + 3);
        }
        return true;
      case Field::kInputType:
        if (!is(v, od::json_type::array)) return false;
        for (od::value element : v.get_array()) {
          if (e_.input_type.text.empty() && is_text(element)) {
            e_.input_type.view(text_of(element));
          } else {
            validate(element, events_open_ + 3);
          }
        }
        return true;
      default:
        return false;
    }
  }

  // The first inner array's product: the collective's first input tensor.
  bool input_dims(od::value& element) {
    if (e_.first_dims_done || !is(element, od::json_type::array)) return false;
    e_.dims_product = 1;
    for (od::value n : element.get_array()) {
      if (is_number(n)) {
        e_.dims_product *= n.get_double().value();
      } else {
        validate(n, events_open_ + 4);
      }
    }
    e_.first_dims_done = true;
    return true;
  }

  // Views of the part's text (or of simdjson's, where a string was decoded): both stay put
  // while the part is read.
  static bool text(od::value& v, FieldText& out) {
    if (!is_text(v)) return false;
    out.view(text_of(v));
    return true;
  }

  static bool number(od::value& v, double& out) {
    if (!is_number(v)) return false;
    out = v.get_double();
    return true;
  }

  // pid, tid and process groups: text, or a number written as text; true, false and null
  // empty it; an object or array leaves it as it was, as the one pass does.
  static bool scalar_text(od::value& v, FieldText& out) {
    switch (v.type()) {
      case od::json_type::string:
        out.view(text_of(v));
        return true;
      case od::json_type::number:
        if (const std::string_view digits = plain_integer(v.raw_json_token()); !digits.empty()) {
          out.view(digits);
        } else {
          out.number(v.get_double());
        }
        return true;
      case od::json_type::boolean:
      case od::json_type::null:
        validate(v, 0);  // a scalar: no nesting
        out.text = {};
        return true;
      default:
        return false;
    }
  }

  TraceFile& out_;
  std::vector<TraceEvent>& events_;
  EventMaker maker_;
  EventFields e_;
  std::size_t events_open_ = 2;  // containers around an event's object: the root and the events array
};

}  // namespace

PartParser::PartParser() : parser_(kMostPartBytes) {}

std::optional<ParsedPart> PartParser::parse(std::string_view padded, std::size_t length, bool cut_after) {
  if (padded.size() < length + kPadding) return std::nullopt;
  ParsedPart out;
  try {
    if (length > kMostPartBytes ||
        (parser_.capacity() < length && parser_.allocate(length, kMaxJsonDepth) != simdjson::SUCCESS)) {
      return std::nullopt;
    }
    od::document doc = parser_.iterate(simdjson::padded_string_view(padded.data(), length, padded.size()));
    PartWalk walk(out);
    walk.document(doc);
    if (!walk.saw_events || (cut_after && !walk.ends_with_null)) return std::nullopt;
  } catch (const simdjson::simdjson_error&) {
    return std::nullopt;
  } catch (const std::bad_alloc&) {  // the one pass reports it
    return std::nullopt;
  }
  return out;
}

}  // namespace ddp
