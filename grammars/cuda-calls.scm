; Calls made from a function or region body (to follow __device__ / declare target functions).
(call_expression function: (_) @callee)
