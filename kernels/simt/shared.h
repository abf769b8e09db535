#pragma once
// __shared__ memory in the emulation. H2O_SHARED(T, name, [N]...)
// (kernels/portable.h) declares a simt::Shared<T[N]...>: the storage, plus the
// name the race check reports. Its elements are reached through SharedRef
// proxies that tell the check (race_check.h) of every read and write, and
// through SharedPtr where a kernel hands a shared array on (block_reduce's
// slots: kern::SharedPtr<T>, a plain T* under nvcc) or takes an element's
// address (atomicAdd(&histogram[b], 1)).
//
// What a kernel can do with shared memory here: index it (any number of
// dimensions), read and assign elements of arithmetic types (compound
// assignments too), take an element's address, pass an array as a SharedPtr
// and offset it. Not: structs in shared memory, or a shared address turned
// into a plain pointer (it would escape the check).
#include <cstddef>
#include <type_traits>

#include "kernels/simt/race_check.h"

namespace simt {

template <class T>
class SharedPtr;

// One element: converting it to T reads, assigning a T writes.
template <class T>
class SharedRef {
  static_assert(std::is_arithmetic_v<T>, "shared elements are numbers in the emulation");

 public:
  SharedRef(T* p, SharedVar* var) : p_(p), var_(var) {}
  SharedRef(const SharedRef&) = default;

  operator T() const {
    note_shared(*var_, p_, Access::Read);
    return *p_;
  }
  SharedRef& operator=(T v) {
    note_shared(*var_, p_, Access::Write);
    *p_ = v;
    return *this;
  }
  // a[i] = b[j] reads b[j] and writes a[i] (not a copy of the proxy).
  SharedRef& operator=(const SharedRef& other) { return *this = T(other); }
  SharedPtr<T> operator&() const { return SharedPtr<T>(p_, var_); }

#define SIMT_SHARED_COMPOUND(op) \
  template <class U>             \
  SharedRef& operator op##=(U v) { return *this = T(T(*this) op v); }
  SIMT_SHARED_COMPOUND(+)
  SIMT_SHARED_COMPOUND(-)
  SIMT_SHARED_COMPOUND(*)
  SIMT_SHARED_COMPOUND(/)
  SIMT_SHARED_COMPOUND(|)
  SIMT_SHARED_COMPOUND(&)
  SIMT_SHARED_COMPOUND(^)
#undef SIMT_SHARED_COMPOUND
  SharedRef& operator++() { return *this += 1; }
  SharedRef& operator--() { return *this -= 1; }
  T operator++(int) {
    const T old = *this;
    *this = T(old + 1);
    return old;
  }
  T operator--(int) {
    const T old = *this;
    *this = T(old - 1);
    return old;
  }

 private:
  T* p_;
  SharedVar* var_;
};

// An address in a shared array: [] and * give a SharedRef (or, into an array
// of arrays, a SharedPtr to the row).
template <class T>
class SharedPtr {
 public:
  using Element = std::conditional_t<std::is_array_v<T>, SharedPtr<std::remove_extent_t<T>>, SharedRef<T>>;

  SharedPtr() = default;
  SharedPtr(T* p, SharedVar* var) : p_(p), var_(var) {}

  Element operator[](std::ptrdiff_t i) const { return element(p_ + i); }
  Element operator*() const { return element(p_); }
  SharedPtr operator+(std::ptrdiff_t i) const { return SharedPtr(p_ + i, var_); }
  SharedPtr operator-(std::ptrdiff_t i) const { return SharedPtr(p_ - i, var_); }

  // For the emulation's atomics and for tests: the element itself, unchecked.
  T* raw() const { return p_; }
  SharedVar* var() const { return var_; }

 private:
  Element element(T* at) const {
    if constexpr (std::is_array_v<T>)
      return Element(*at, var_);  // the row decays to its first element
    else
      return Element(at, var_);
  }

  T* p_ = nullptr;
  SharedVar* var_ = nullptr;
};

// A __shared__ variable. The primary template is a scalar (`H2O_SHARED(int, s_found)`).
template <class T>
class Shared {
 public:
  Shared(const char* name, const char* function) : var_(name, function, &value_, sizeof(T), 1) {}
  Shared(const Shared&) = delete;
  Shared& operator=(const Shared&) = delete;

  operator T() const { return ref(); }
  Shared& operator=(T v) {
    ref() = v;
    return *this;
  }
  SharedPtr<T> operator&() const { return SharedPtr<T>(&value_, &var_); }

 private:
  SharedRef<T> ref() const { return SharedRef<T>(&value_, &var_); }

  mutable T value_{};
  mutable SharedVar var_;
};

// An array (of any rank): it is a SharedPtr to its first element, so it
// indexes as one and passes where a SharedPtr is taken (and a template
// parameter deduces through the base class).
template <class E, std::size_t N>
class Shared<E[N]> : public SharedPtr<E> {
  using Scalar = std::remove_all_extents_t<E>;

 public:
  Shared(const char* name, const char* function)
      : SharedPtr<E>(data_, &var_), var_(name, function, data_, sizeof(Scalar), sizeof(data_) / sizeof(Scalar)) {}
  Shared(const Shared&) = delete;
  Shared& operator=(const Shared&) = delete;

 private:
  E data_[N]{};
  SharedVar var_;
};

}  // namespace simt
