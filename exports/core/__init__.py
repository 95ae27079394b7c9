"""The pure core of repair-dataset exports: no Django, plain dataclasses in and out.

- :mod:`inputs`: what one failed rollout brings (record, decisive info, misbehaviour
  occurrences, corrections);
- :mod:`chat`: steps to OpenAI chat messages; :mod:`validate`: chat rules and leakage;
- :mod:`builders`: the four example kinds; :mod:`divergence`: corrections from a
  successful rollout of the same task;
- :mod:`writer`, :mod:`run`, :mod:`manifest`: streaming JSONL with sha256 and the manifest;
- :mod:`filters`: parsing of the user's filters; :mod:`schemas`: the JSON Schemas.
"""
