// marketdata::Book against a reference model: random feeds of valid
// messages (every kind, levels that open and close, ids that come back,
// instruments halted, unlisted and listed again, Clear) mixed with messages
// the book must refuse, applied as models or as bytes; after every message
// the book's orders (canonical order), levels of every side, instruments
// and counts must equal the model's. The model is the contract read
// literally: std::map of instruments, of price levels, a std::list per
// level.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <iterator>
#include <list>
#include <map>
#include <optional>
#include <random>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "codec/strong.h"
#include "codec/types.h"
#include "feed/messages.h"
#include "feed/types.h"
#include "gtest/gtest.h"
#include "marketdata/book.h"
#include "tests/marketdata/book_test_support.h"

namespace orderwire::marketdata {
namespace {

using test::Side;
using test::TradingState;

struct ModelOrder {
  std::uint32_t instrument;
  Side side;
  std::int64_t price;
  std::uint64_t quantity;
};

struct ModelInstrument {
  std::optional<TradingState> state;
  std::int64_t min_price = 0;
  std::int64_t max_price = 0;
  // [0] bids, [1] asks: price -> ids, oldest first.
  std::map<std::int64_t, std::list<std::uint64_t>> sides[2];
};

// The contract, literally.
class ReferenceBook {
 public:
  std::map<std::uint32_t, ModelInstrument> instruments;
  std::map<std::uint64_t, ModelOrder> orders;

  [[nodiscard]] bool Listed(std::uint32_t id) const {
    const auto it = instruments.find(id);
    return it != instruments.end() &&
           it->second.state != TradingState::kUnlisted;
  }
  [[nodiscard]] std::size_t OrdersOf(std::uint32_t id) const {
    std::size_t n = 0;
    for (const auto& [order_id, o] : orders) n += o.instrument == id ? 1 : 0;
    return n;
  }

  void Add(std::uint64_t id, const ModelOrder& o) {
    orders[id] = o;
    Queue(o).push_back(id);
  }
  void Remove(std::uint64_t id) {
    const ModelOrder o = orders.at(id);
    auto& side = instruments.at(o.instrument).sides[Index(o.side)];
    side.at(o.price).remove(id);
    if (side.at(o.price).empty()) side.erase(o.price);
    orders.erase(id);
  }
  void Lower(std::uint64_t id, std::uint64_t by) {
    orders.at(id).quantity -= by;
    if (orders.at(id).quantity == 0) Remove(id);
  }
  void Move(std::uint64_t id, std::int64_t price, std::uint64_t quantity) {
    ModelOrder o = orders.at(id);
    Remove(id);
    o.price = price;
    o.quantity = quantity;
    Add(id, o);
  }
  void Clear(std::uint32_t id) {
    for (auto it = orders.begin(); it != orders.end();) {
      it = it->second.instrument == id ? orders.erase(it) : std::next(it);
    }
    instruments.erase(id);
  }

  [[nodiscard]] std::vector<BookOrder> Canonical() const {
    std::vector<BookOrder> out;
    for (const auto& [id, instrument] : instruments) {
      for (auto it = instrument.sides[0].rbegin();
           it != instrument.sides[0].rend(); ++it) {
        for (const std::uint64_t o : it->second) out.push_back(Of(o));
      }
      for (const auto& [price, ids] : instrument.sides[1]) {
        for (const std::uint64_t o : ids) out.push_back(Of(o));
      }
    }
    return out;
  }
  [[nodiscard]] std::vector<LevelInfo> LevelsOf(std::uint32_t id,
                                                Side side) const {
    std::vector<LevelInfo> out;
    const auto& levels = instruments.at(id).sides[Index(side)];
    auto add = [&](const std::pair<const std::int64_t,
                                   std::list<std::uint64_t>>& level) {
      std::uint64_t total = 0;
      for (const std::uint64_t o : level.second) total += orders.at(o).quantity;
      out.push_back(test::Level(
          level.first, total, static_cast<std::uint32_t>(level.second.size())));
    };
    if (side == Side::kBuy) {
      for (auto it = levels.rbegin(); it != levels.rend(); ++it) add(*it);
    } else {
      for (const auto& level : levels) add(level);
    }
    return out;
  }

 private:
  static std::size_t Index(Side side) { return side == Side::kBuy ? 0 : 1; }
  std::list<std::uint64_t>& Queue(const ModelOrder& o) {
    return instruments.at(o.instrument).sides[Index(o.side)][o.price];
  }
  [[nodiscard]] BookOrder Of(std::uint64_t id) const {
    const ModelOrder& o = orders.at(id);
    return test::Order(id, o.instrument, o.side, o.price, o.quantity);
  }
};

using FeedMessage =
    std::variant<feed::InstrumentDirectory, feed::TradingStatus,
                 feed::OrderAdded, feed::OrderExecuted, feed::OrderReduced,
                 feed::OrderDeleted, feed::OrderReplaced>;

// One step: a message and what the book must answer, or a Clear.
struct Step {
  std::optional<FeedMessage> message;  // none: Clear(clear_instrument)
  BookError expected = BookError::kOk;
  std::uint32_t clear_instrument = 0;
};

// Random steps, applied to the model as they are made (a refused one
// leaves it unchanged). Instruments 1 to 5; prices in a narrow band so that
// levels hold several orders and open and close often.
class FeedGenerator {
 public:
  FeedGenerator(std::uint64_t seed, ReferenceBook& model)
      : rng_(seed), model_(model) {}

  Step Next() {
    const std::uint64_t roll = Uniform(100);
    // Instrument steps first, so that a feed whose instruments are all
    // unlisted and empty still lists them again.
    if (roll >= 78 && roll < 83) return Status();
    if (roll >= 83 && roll < 86) return Directory();
    if (roll == 86) return ClearOne();
    if (model_.orders.empty() || roll < 30) return Add();
    if (roll < 45) return Execute();
    if (roll < 55) return Reduce();
    if (roll < 65) return Delete();
    if (roll < 78) return Replace();
    return Refused();
  }

 private:
  std::uint64_t Uniform(std::uint64_t n) { return rng_() % n; }
  std::uint32_t AnyInstrument() {
    return static_cast<std::uint32_t>(1 + Uniform(5));
  }
  std::int64_t AnyPrice() {
    return 1000 + static_cast<std::int64_t>(Uniform(8));
  }
  std::uint64_t AnyQuantity() { return 1 + Uniform(100); }
  Side AnySide() { return Uniform(2) == 0 ? Side::kBuy : Side::kSell; }
  std::uint64_t AnyLive() {
    auto it = model_.orders.begin();
    std::advance(it,
                 static_cast<std::ptrdiff_t>(Uniform(model_.orders.size())));
    return it->first;
  }
  // A fresh id, or now and then an id that was live once (ids come back).
  std::uint64_t NewId() {
    if (next_id_ > 1 && Uniform(10) == 0) {
      const std::uint64_t old = 1 + Uniform(next_id_ - 1);
      if (!model_.orders.contains(old)) return old;
    }
    return next_id_++;
  }

  Step Add() {
    const std::uint32_t instrument = AnyInstrument();
    const std::uint64_t id = NewId();
    const ModelOrder o{instrument, AnySide(), AnyPrice(), AnyQuantity()};
    const feed::OrderAdded m =
        test::Added(id, instrument, o.side, o.price, o.quantity);
    if (!model_.Listed(instrument)) {
      return {m, BookError::kInstrumentNotListed};
    }
    model_.Add(id, o);
    return {m};
  }
  Step Execute() {
    const std::uint64_t id = AnyLive();
    const ModelOrder o = model_.orders.at(id);
    const std::uint64_t q =
        Uniform(3) == 0 ? o.quantity : 1 + Uniform(o.quantity);
    const feed::OrderExecuted m =
        test::Executed(id, o.instrument, o.side, o.price, q, ++match_id_);
    if (!model_.Listed(o.instrument)) {
      return {m, BookError::kInstrumentNotListed};
    }
    model_.Lower(id, q);
    return {m};
  }
  Step Reduce() {
    const std::uint64_t id = AnyLive();
    const ModelOrder o = model_.orders.at(id);
    if (o.quantity < 2) {
      return {test::Reduced(id, o.instrument, 1), BookError::kReducedToZero};
    }
    const std::uint64_t by = 1 + Uniform(o.quantity - 1);
    model_.Lower(id, by);
    return {test::Reduced(id, o.instrument, by)};
  }
  Step Delete() {
    const std::uint64_t id = AnyLive();
    const feed::OrderDeleted m =
        test::Deleted(id, model_.orders.at(id).instrument);
    model_.Remove(id);
    return {m};
  }
  Step Replace() {
    const std::uint64_t id = AnyLive();
    const std::int64_t price = AnyPrice();
    const std::uint64_t quantity = AnyQuantity();
    const feed::OrderReplaced m =
        test::Replaced(id, model_.orders.at(id).instrument, price, quantity);
    model_.Move(id, price, quantity);
    return {m};
  }
  Step Status() {
    const std::uint32_t instrument = AnyInstrument();
    const std::uint64_t pick = Uniform(3);
    const TradingState state = pick == 0   ? TradingState::kTrading
                               : pick == 1 ? TradingState::kHalted
                                           : TradingState::kUnlisted;
    const feed::TradingStatus m = test::Status(instrument, state);
    if (!model_.instruments.contains(instrument)) {
      return {m, BookError::kInstrumentNotListed};
    }
    if (state == TradingState::kUnlisted && model_.OrdersOf(instrument) != 0) {
      return {m, BookError::kUnlistedNotEmpty};
    }
    model_.instruments[instrument].state = state;
    return {m};
  }
  Step Directory() {
    const std::uint32_t instrument = AnyInstrument();
    const auto low = static_cast<std::int64_t>(1 + Uniform(1000));
    ModelInstrument& entry = model_.instruments[instrument];
    entry.min_price = low;
    entry.max_price = low + 5000;
    return {test::Directory(instrument, low, low + 5000)};
  }
  Step ClearOne() {
    const std::uint32_t instrument = AnyInstrument();
    model_.Clear(instrument);
    return {std::nullopt, BookError::kOk, instrument};
  }
  // A message the book contradicts; the model unchanged.
  Step Refused() {
    const std::uint64_t id = AnyLive();
    const ModelOrder o = model_.orders.at(id);
    const BookError not_listed = BookError::kInstrumentNotListed;
    const bool listed = model_.Listed(o.instrument);
    const Side other = o.side == Side::kBuy ? Side::kSell : Side::kBuy;
    switch (Uniform(6)) {
      case 0:
        return {test::Added(id, o.instrument, o.side, o.price, 1),
                listed ? BookError::kOrderIdLive : not_listed};
      case 1:
        return {
            test::Executed(next_id_ + 1000, o.instrument, o.side, o.price, 1),
            listed ? BookError::kOrderIdUnknown : not_listed};
      case 2:
        return {
            test::Executed(id, o.instrument, o.side, o.price, o.quantity + 1),
            listed ? BookError::kAboveDisplayed : not_listed};
      case 3:
        return {test::Executed(id, o.instrument, other, o.price, 1),
                listed ? BookError::kSideMismatch : not_listed};
      case 4:
        return {test::Reduced(id, o.instrument, o.quantity),
                listed ? BookError::kReducedToZero : not_listed};
      default:
        return {test::Deleted(id, o.instrument % 5 + 1),
                model_.Listed(o.instrument % 5 + 1)
                    ? BookError::kInstrumentMismatch
                    : not_listed};
    }
  }

  std::mt19937_64 rng_;
  ReferenceBook& model_;
  std::uint64_t next_id_ = 1;
  std::uint64_t match_id_ = 0;
};

// The book answers every query as the model does.
void ExpectSameAsModel(const Book& book, const ReferenceBook& model) {
  ASSERT_EQ(test::Orders(book), model.Canonical());
  ASSERT_EQ(book.order_count(), model.orders.size());
  std::vector<std::uint32_t> known;
  book.ForEachInstrument([&](const InstrumentInfo& info) {
    known.push_back(info.instrument_id.value());
  });
  std::vector<std::uint32_t> expected_known;
  for (const auto& [id, instrument] : model.instruments) {
    expected_known.push_back(id);
    const std::optional<InstrumentInfo> info =
        book.FindInstrument(codec::InstrumentId(id));
    ASSERT_TRUE(info.has_value()) << id;
    ASSERT_EQ(info->state, instrument.state) << id;
    ASSERT_EQ(info->min_price.value(), instrument.min_price) << id;
    ASSERT_EQ(info->max_price.value(), instrument.max_price) << id;
    for (const Side side : {Side::kBuy, Side::kSell}) {
      ASSERT_EQ(test::Levels(book, id, side), model.LevelsOf(id, side))
          << id << " " << codec::Name(side);
    }
  }
  ASSERT_EQ(known, expected_known);
}

void RunRandomFeed(std::uint64_t seed, int steps) {
  SCOPED_TRACE(::testing::Message() << "seed " << seed);
  ReferenceBook model;
  Book book;
  for (std::uint32_t id = 1; id <= 3; ++id) {
    test::List(book, id);
    model.instruments[id] =
        ModelInstrument{TradingState::kTrading, 1, 1000000000, {}};
  }
  FeedGenerator generator(seed, model);
  std::mt19937_64 path(seed ^ 0x5eed);
  int refused = 0;
  std::size_t max_orders = 0;
  for (int i = 0; i < steps; ++i) {
    const Step step = generator.Next();
    if (!step.message) {
      book.Clear(codec::InstrumentId(step.clear_instrument));
    } else {
      const BookError got =
          path() % 2 == 0
              ? std::visit([&](const auto& m) { return book.Apply(m); },
                           *step.message)
              : book.ApplyMessage(
                    std::visit([](const auto& m) { return test::Encode(m); },
                               *step.message));
      ASSERT_EQ(got, step.expected) << "step " << i;
      refused += got == BookError::kOk ? 0 : 1;
    }
    ExpectSameAsModel(book, model);
    max_orders = std::max(max_orders, book.order_count());
    if (::testing::Test::HasFatalFailure()) {
      FAIL() << "after step " << i;
    }
  }
  // The run was not trivial: refusals happened and the book grew.
  EXPECT_GT(refused, steps / 50);
  EXPECT_GE(max_orders, 40U);
}

TEST(BookRandom, MatchesTheReferenceModelAfterEveryMessage) {
  for (const std::uint64_t seed : {1U, 2U, 3U, 4U}) {
    RunRandomFeed(seed, 5000);
    if (::testing::Test::HasFatalFailure()) return;
  }
}

TEST(BookRandom, ClearAllThenTheSameFeedGivesTheSameBook) {
  // A book reused after Clear() (snapshot recovery of everything) behaves
  // as a new one: the same random feed gives the same dump.
  ReferenceBook model_a;
  ReferenceBook model_b;
  Book fresh;
  Book reused;
  test::List(reused, 4);
  ASSERT_EQ(reused.Apply(test::Added(77, 4, Side::kBuy, 5, 5)), BookError::kOk);
  reused.Clear();
  for (Book* book : {&fresh, &reused}) {
    for (std::uint32_t id = 1; id <= 3; ++id) test::List(*book, id);
  }
  for (ReferenceBook* model : {&model_a, &model_b}) {
    for (std::uint32_t id = 1; id <= 3; ++id) {
      model->instruments[id] =
          ModelInstrument{TradingState::kTrading, 1, 1000000000, {}};
    }
  }
  FeedGenerator a(9, model_a);
  FeedGenerator b(9, model_b);
  for (int i = 0; i < 2000; ++i) {
    const Step sa = a.Next();
    const Step sb = b.Next();
    if (!sa.message) {
      fresh.Clear(codec::InstrumentId(sa.clear_instrument));
      reused.Clear(codec::InstrumentId(sb.clear_instrument));
      continue;
    }
    const BookError ea =
        std::visit([&](const auto& m) { return fresh.Apply(m); }, *sa.message);
    const BookError eb =
        std::visit([&](const auto& m) { return reused.Apply(m); }, *sb.message);
    ASSERT_EQ(ea, eb) << i;
  }
  EXPECT_EQ(test::Dump(reused), test::Dump(fresh));
  EXPECT_GT(fresh.order_count(), 0U);
}

}  // namespace
}  // namespace orderwire::marketdata
