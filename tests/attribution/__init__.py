"""Tests of counterfactual failure attribution on synthetic structural causal models (``scm/``)."""
