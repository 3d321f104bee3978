// The Python side of every light CPU build of a load_inline extension (sc_kb_boxed.hpp): built
// once per torch version, compiler and flags, trusted, outside the jail, and loaded beside each
// extension (found through $ORIGIN). An extension's PyInit_<name> calls sc_kbpy_module with its
// boxed entries; the module it gets back behaves as the pybind11 module of a full build
// (sc_kb_module.hpp): one function per entry (positional arguments, converted as pybind11 and
// torch's casters do), torch's C++ errors translated as torch::wrap_pybind_function translates
// them, an emulator fault raised as `<module>.EmulatorFault`, `_sc_status` and `_sc_configure`.
#include <torch/extension.h>
#include <torch/csrc/Dtype.h>
#include <torch/csrc/DynamicTypes.h>
#include <torch/csrc/Size.h>
#include <torch/csrc/autograd/python_variable.h>

#include <cstring>
#include <string>
#include <vector>

#include "sc_kb_boxed.hpp"
#include "sc_kb_module.hpp"

namespace py = pybind11;

namespace {

sc_kb::Value from_python(py::handle obj, const std::string& fn, size_t index) {
  sc_kb::Value v;
  PyObject* p = obj.ptr();
  if (p == Py_None) return v;
  if (THPVariable_Check(p)) {
    v.kind = sc_kb::Value::Tensor;
    v.tensor = THPVariable_Unpack(p);
  } else if (PyBool_Check(p)) {
    v.kind = sc_kb::Value::Bool;
    v.i = p == Py_True ? 1 : 0;
  } else if (PyLong_Check(p) || (PyIndex_Check(p) && !PyFloat_Check(p))) {
    v.kind = sc_kb::Value::Int;
    v.i = py::cast<int64_t>(obj);
  } else if (PyFloat_Check(p)) {
    v.kind = sc_kb::Value::Double;
    v.d = PyFloat_AsDouble(p);
  } else if (THPDtype_Check(p)) {
    v.kind = sc_kb::Value::Dtype;
    v.i = static_cast<int64_t>(reinterpret_cast<THPDtype*>(p)->scalar_type);
  } else if (PyUnicode_Check(p)) {
    v.kind = sc_kb::Value::String;
    v.s = py::cast<std::string>(obj);
  } else if (PyList_Check(p) || PyTuple_Check(p)) {
    v.kind = sc_kb::Value::List;
    for (py::handle item : py::reinterpret_borrow<py::sequence>(obj)) {
      v.items.push_back(from_python(item, fn, index));
    }
  } else {
    throw py::type_error(fn + "(): incompatible function arguments: argument " +
                         std::to_string(index + 1) + ": cannot convert a Python " +
                         std::string(Py_TYPE(p)->tp_name));
  }
  return v;
}

py::object to_python(const sc_kb::Value& v) {
  switch (v.kind) {
    case sc_kb::Value::None:
      return py::none();
    case sc_kb::Value::Tensor:
      return py::reinterpret_steal<py::object>(THPVariable_Wrap(v.tensor));
    case sc_kb::Value::Int:
      return py::int_(v.i);
    case sc_kb::Value::Double:
      return py::float_(v.d);
    case sc_kb::Value::Bool:
      return py::bool_(v.i != 0);
    case sc_kb::Value::String:
      return py::str(v.s);
    case sc_kb::Value::Dtype:
      return py::reinterpret_borrow<py::object>(
          reinterpret_cast<PyObject*>(torch::getTHPDtype(static_cast<at::ScalarType>(v.i))));
    case sc_kb::Value::List: {
      py::list out;
      for (const sc_kb::Value& item : v.items) out.append(to_python(item));
      return std::move(out);
    }
    case sc_kb::Value::Tuple: {
      py::tuple out(v.items.size());
      for (size_t k = 0; k < v.items.size(); ++k) out[k] = to_python(v.items[k]);
      return std::move(out);
    }
  }
  return py::none();
}

}  // namespace

extern "C" __attribute__((visibility("default"))) PyObject* sc_kbpy_module(
    const char* name, const sc_kb::Function* functions, int count) {
  try {
    // CPython keeps pointers to the definition and the name for the module's lifetime.
    auto* def = new PyModuleDef();
    py::module_ m = py::module_::create_extension_module(strdup(name), nullptr, def);
    sc_kb::define_controls(m);
    for (int k = 0; k < count; ++k) {
      sc_kb::Entry entry = functions[k].entry;
      std::string fn = functions[k].name;
      auto invoke = torch::wrap_pybind_function(
          [entry](const std::vector<sc_kb::Value>* in, sc_kb::Value* out, std::string* error) {
            return entry(in->data(), static_cast<int>(in->size()), out, error);
          });
      m.def(functions[k].name, sc_kb::guard([invoke, fn](py::args args) -> py::object {
              std::vector<sc_kb::Value> in;
              in.reserve(args.size());
              size_t index = 0;
              for (py::handle arg : args) in.push_back(from_python(arg, fn, index++));
              sc_kb::Value out;
              std::string error;
              if (invoke(&in, &out, &error) == sc_kb::kTypeError) throw py::type_error(error);
              return to_python(out);
            }),
            functions[k].doc);
    }
    return m.release().ptr();
  } catch (py::error_already_set& e) {
    e.restore();
  } catch (const std::exception& e) {
    PyErr_SetString(PyExc_ImportError, e.what());
  }
  return nullptr;
}
