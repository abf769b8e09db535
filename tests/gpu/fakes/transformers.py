"""A test double of transformers' LlamaConfig / LlamaForCausalLM for `run_on_device.sh
selftest` (see fakes/torch.py). Never on the GPU machine's PYTHONPATH."""
import torch

__version__ = "0.0-fake"


class LlamaConfig:
    def __init__(self, **kw):
        self.__dict__.update(kw)
        self._attn_implementation = "sdpa"


class _Out:
    def __init__(self, logits, pkv):
        self.logits = logits
        self.past_key_values = pkv


class _Ns:
    pass


class LlamaForCausalLM:
    def __init__(self, config):
        self.config = config
        d, h, v = config.hidden_size, config.intermediate_size, config.vocab_size
        self._params = [torch.Tensor((v, d))]
        layer = _Ns()
        layer.mlp = _Ns()
        layer.mlp.up_proj = _Ns()
        layer.mlp.up_proj.weight = torch.Tensor((h, d))
        self.model = _Ns()
        self.model.layers = [layer] * config.num_hidden_layers
        self._params += [layer.mlp.up_proj.weight] * config.num_hidden_layers

    def parameters(self):
        return iter(self._params)

    def eval(self):
        return self

    def to(self, *args, **kwargs):
        return self

    def forward(self, input_ids=None, past_key_values=None, use_cache=None, logits_to_keep=0):
        n = input_ids.shape[1]
        kept = n if not logits_to_keep else logits_to_keep
        return _Out(torch.Tensor((1, kept, self.config.vocab_size)), past_key_values or object())

    __call__ = forward

    def generate(self, input_ids=None, attention_mask=None, max_new_tokens=1, min_new_tokens=0, do_sample=True,
                 pad_token_id=None):
        assert min_new_tokens == max_new_tokens and do_sample is False
        return torch.Tensor((1, input_ids.shape[1] + max_new_tokens), "int64")
