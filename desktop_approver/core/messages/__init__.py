"""The protocol's messages on the app's side: the pydantic models, the validation ladder that turns
one raw line into a typed message or a typed refusal, and the JSON Schema generated from them.
"""
