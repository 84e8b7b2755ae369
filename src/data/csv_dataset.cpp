#include "data/csv_dataset.h"

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <limits>
#include <string_view>

#include "base/check.h"
#include "base/excerpt.h"
#include "ddpscope/error.h"
#include "io/read_file.h"

namespace ddp {
namespace {

std::string_view trim(std::string_view s) {
  const auto blank = [](char c) { return c == ' ' || c == '\t' || c == '\r'; };
  while (!s.empty() && blank(s.front())) s.remove_prefix(1);
  while (!s.empty() && blank(s.back())) s.remove_suffix(1);
  return s;
}

// Cells of one line, trimmed, with one pair of surrounding double quotes removed.
void split_cells(std::string_view line, std::vector<std::string_view>& cells) {
  cells.clear();
  for (;;) {
    const size_t comma = line.find(',');
    std::string_view cell = trim(line.substr(0, comma));
    if (cell.size() >= 2 && cell.front() == '"' && cell.back() == '"') cell = trim(cell.substr(1, cell.size() - 2));
    cells.push_back(cell);
    if (comma == std::string_view::npos) return;
    line.remove_prefix(comma + 1);
  }
}

// std::from_chars (locale independent, unlike strtod) with a leading '+' allowed.
std::from_chars_result parse_double(std::string_view cell, double& value) {
  if (cell.size() > 1 && cell[0] == '+' && cell[1] != '-' && cell[1] != '+') cell.remove_prefix(1);
  const std::from_chars_result result = std::from_chars(cell.data(), cell.data() + cell.size(), value);
  if (result.ec == std::errc() && result.ptr != cell.data() + cell.size()) {
    return {result.ptr, std::errc::invalid_argument};  // trailing characters: "1.5x"
  }
  return result;
}

// Whether a cell of the first line reads as data: a number of any size, NaN and Inf included
// (so that they are reported as such, not taken for a header).
bool number_like(std::string_view cell) {
  double ignored = 0;
  const std::errc ec = parse_double(cell, ignored).ec;
  return !cell.empty() && (ec == std::errc() || ec == std::errc::result_out_of_range);
}

// Parses a finite float; on failure returns why (the cell quoted), else an empty string.
std::string parse_float(std::string_view cell, float& value) {
  if (cell.empty()) return "empty cell, expected a number";
  double parsed = 0;
  const std::errc ec = parse_double(cell, parsed).ec;
  const auto because = [&](const char* what) {
    std::string message = "cell '";
    message += excerpt(cell);
    message += "' ";
    message += what;
    return message;
  };
  if (ec == std::errc::result_out_of_range) return because("is out of the range of a float");
  if (ec != std::errc()) return because("is not a number");
  if (std::isnan(parsed)) return because("is NaN");
  if (std::isinf(parsed)) return because("is infinite");
  if (std::fabs(parsed) > std::numeric_limits<float>::max()) return because("is out of the range of a float");
  value = static_cast<float>(parsed);
  return {};
}

}  // namespace

CsvDataset::CsvDataset(const std::string& path, int64_t input_dim, int64_t output_dim)
    : input_dim_(input_dim), output_dim_(output_dim) {
  const std::string text = read_input_file(path, "a CSV file (--data csv:PATH)");
  const int64_t expected = input_dim + output_dim;
  const auto fail = [&](int64_t line, int64_t column, const std::string& why) {
    throw DataError(path + ":" + std::to_string(line) + ":" + std::to_string(column) + ": " + why);
  };

  std::string_view rest(text);
  if (rest.starts_with("\xEF\xBB\xBF")) rest.remove_prefix(3);  // UTF-8 byte order mark
  std::vector<std::string_view> cells;
  std::vector<float> row(expected);
  int64_t line_no = 0, first_line = 0, header_line = 0;
  while (!rest.empty()) {
    const size_t newline = rest.find('\n');
    const std::string_view line = rest.substr(0, newline);
    rest.remove_prefix(newline == std::string_view::npos ? rest.size() : newline + 1);
    ++line_no;
    if (trim(line).empty()) continue;
    split_cells(line, cells);
    const int64_t found = static_cast<int64_t>(cells.size());

    if (first_line == 0) {
      // The first line fixes the column count; it must be what the model takes.
      first_line = line_no;
      if (found != expected) {
        fail(line_no, std::min(found, expected) + 1,
             std::to_string(found) + " columns, but --input-dim " + std::to_string(input_dim) + " and --output-dim " +
                 std::to_string(output_dim) + " expect " + std::to_string(expected) +
                 " (the inputs, then the targets)");
      }
      // A header names columns: a line with any number in it is data ("0x1,2,3" is refused, not skipped).
      if (std::none_of(cells.begin(), cells.end(), number_like)) {
        header_line = line_no;
        continue;
      }
    }
    if (found != expected) {
      fail(line_no, std::min(found, expected) + 1,
           "ragged row: found " + std::to_string(found) + " columns, expected " + std::to_string(expected));
    }
    for (int64_t c = 0; c < found; ++c) {
      const std::string why = parse_float(cells[c], row[c]);
      if (!why.empty()) fail(line_no, c + 1, why);
    }
    x_.insert(x_.end(), row.begin(), row.begin() + input_dim);
    y_.insert(y_.end(), row.begin() + input_dim, row.end());
    ++rows_;
  }
  if (rows_ == 0) {
    if (header_line == 0) fail(1, 1, "empty file: no data rows");
    fail(header_line + 1, 1, "no data rows after the header");
  }
}

void CsvDataset::fill(int64_t /*epoch*/, std::span<const int64_t> indices, float* x, float* y) const {
  for (size_t j = 0; j < indices.size(); ++j) {
    const int64_t index = indices[j];
    DDP_CHECK_GE(index, 0, "sample index out of range");
    DDP_CHECK_LT(index, rows_, "sample index out of range");
    std::copy_n(&x_[index * input_dim_], input_dim_, &x[j * input_dim_]);
    std::copy_n(&y_[index * output_dim_], output_dim_, &y[j * output_dim_]);
  }
}

}  // namespace ddp
