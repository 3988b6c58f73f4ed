"""A saved result or diff: the JSON Schemas of both kinds (`schemas`, shipped in `schema/`) and the reader that checks a
saved JSON against them (`validate`), for `ncuadvisor render` and `ncuadvisor diff`. It sits above `result` and
`diff`, whose types it reads back."""
