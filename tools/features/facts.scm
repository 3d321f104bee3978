;; The node types the feature families read (tools/features/facts.py visits them in
;; document order). One capture name, one alternation: tree-sitter walks the tree once, in C.
[
  (subscript_expression)
  (pointer_expression)
  (assignment_expression)
  (call_expression)
  (declaration)
  (for_statement)
  (while_statement)
  (do_statement)
  (for_range_loop)
  (if_statement)
  (switch_statement)
  (conditional_expression)
  (function_definition)
  (preproc_call)
  (preproc_def)
  (template_declaration)
  (launch_bounds)
  (gnu_asm_expression)
  (qualified_identifier)
  (preproc_include)
] @n
