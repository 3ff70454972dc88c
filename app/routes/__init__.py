"""One router per resource; routers parse, authorise and call the library or a service module."""
