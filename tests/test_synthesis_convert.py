"""The taming -> diffusers converter against a taming-style reference written here.

``TamingEncoder``/``TamingDecoder`` below follow the taming-transformers architecture
(``taming/modules/diffusionmodules/model.py``): GroupNorm(32, eps 1e-6), swish, ResnetBlock with
a 1x1 ``nin_shortcut`` when channels change, single-head AttnBlock of 1x1 convolutions,
Downsample = pad (0,1,0,1) + stride-2 conv, Upsample = nearest x2 + conv; the decoder runs
conv_in, mid (block_1, attn_1, block_2), up levels from the lowest resolution (``up[n-1]``)
to the highest (``up[0]``), each ``num_res_blocks + 1`` res blocks, then norm_out, conv_out.
"""

from __future__ import annotations

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F
import yaml

from spatialprobe.convert.vqgan import ConversionError, convert_state_dict, convert_vqgan, vqmodel_config

DDCONFIG = {"double_z": False, "z_channels": 8, "resolution": 16, "in_channels": 3, "out_ch": 3,
            "ch": 32, "ch_mult": [1, 2], "num_res_blocks": 1, "attn_resolutions": [8],
            "dropout": 0.0}
PARAMS = {"embed_dim": 4, "n_embed": 16, "ddconfig": DDCONFIG}


def norm(channels):
    return nn.GroupNorm(32, channels, eps=1e-6, affine=True)


def swish(x):
    return x * torch.sigmoid(x)


class ResnetBlock(nn.Module):
    def __init__(self, cin, cout):
        super().__init__()
        self.norm1, self.conv1 = norm(cin), nn.Conv2d(cin, cout, 3, padding=1)
        self.norm2, self.conv2 = norm(cout), nn.Conv2d(cout, cout, 3, padding=1)
        if cin != cout:
            self.nin_shortcut = nn.Conv2d(cin, cout, 1)

    def forward(self, x):
        h = self.conv1(swish(self.norm1(x)))
        h = self.conv2(swish(self.norm2(h)))
        return (self.nin_shortcut(x) if hasattr(self, "nin_shortcut") else x) + h


class AttnBlock(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.norm = norm(c)
        self.q, self.k, self.v, self.proj_out = (nn.Conv2d(c, c, 1) for _ in range(4))

    def forward(self, x):
        h = self.norm(x)
        b, c, hh, ww = x.shape
        q = self.q(h).reshape(b, c, hh * ww).permute(0, 2, 1)
        k = self.k(h).reshape(b, c, hh * ww)
        weights = torch.softmax(torch.bmm(q, k) * c ** -0.5, dim=2)
        v = self.v(h).reshape(b, c, hh * ww)
        out = torch.bmm(v, weights.permute(0, 2, 1)).reshape(b, c, hh, ww)
        return x + self.proj_out(out)


class Downsample(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.conv = nn.Conv2d(c, c, 3, stride=2, padding=0)

    def forward(self, x):
        return self.conv(F.pad(x, (0, 1, 0, 1)))


class Upsample(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.conv = nn.Conv2d(c, c, 3, padding=1)

    def forward(self, x):
        return self.conv(F.interpolate(x, scale_factor=2.0, mode="nearest"))


def mid_block(c):
    mid = nn.Module()
    mid.block_1, mid.attn_1, mid.block_2 = ResnetBlock(c, c), AttnBlock(c), ResnetBlock(c, c)
    return mid


def run_mid(mid, h):
    return mid.block_2(mid.attn_1(mid.block_1(h)))


class TamingEncoder(nn.Module):
    def __init__(self, dd):
        super().__init__()
        ch, mult, n = dd["ch"], dd["ch_mult"], len(dd["ch_mult"])
        self.conv_in = nn.Conv2d(dd["in_channels"], ch, 3, padding=1)
        self.down, res, cin = nn.ModuleList(), dd["resolution"], ch
        for level in range(n):
            stage = nn.Module()
            stage.block, stage.attn = nn.ModuleList(), nn.ModuleList()
            for _ in range(dd["num_res_blocks"]):
                stage.block.append(ResnetBlock(cin, ch * mult[level]))
                cin = ch * mult[level]
                if res in dd["attn_resolutions"]:
                    stage.attn.append(AttnBlock(cin))
            if level != n - 1:
                stage.downsample, res = Downsample(cin), res // 2
            self.down.append(stage)
        self.mid = mid_block(cin)
        self.norm_out, self.conv_out = norm(cin), nn.Conv2d(cin, dd["z_channels"], 3, padding=1)

    def forward(self, x):
        h = self.conv_in(x)
        for stage in self.down:
            for i, block in enumerate(stage.block):
                h = block(h)
                if len(stage.attn):
                    h = stage.attn[i](h)
            if hasattr(stage, "downsample"):
                h = stage.downsample(h)
        return self.conv_out(swish(self.norm_out(run_mid(self.mid, h))))


class TamingDecoder(nn.Module):
    def __init__(self, dd):
        super().__init__()
        ch, mult, n = dd["ch"], dd["ch_mult"], len(dd["ch_mult"])
        cin = ch * mult[-1]
        res = dd["resolution"] // 2 ** (n - 1)
        self.conv_in = nn.Conv2d(dd["z_channels"], cin, 3, padding=1)
        self.mid = mid_block(cin)
        self.up = nn.ModuleList()
        for level in reversed(range(n)):
            stage = nn.Module()
            stage.block, stage.attn = nn.ModuleList(), nn.ModuleList()
            for _ in range(dd["num_res_blocks"] + 1):
                stage.block.append(ResnetBlock(cin, ch * mult[level]))
                cin = ch * mult[level]
                if res in dd["attn_resolutions"]:
                    stage.attn.append(AttnBlock(cin))
            if level != 0:
                stage.upsample, res = Upsample(cin), res * 2
            self.up.insert(0, stage)  # taming keeps up[0] = highest resolution
        self.norm_out, self.conv_out = norm(cin), nn.Conv2d(cin, dd["out_ch"], 3, padding=1)

    def forward(self, z):
        h = run_mid(self.mid, self.conv_in(z))
        for level in reversed(range(len(self.up))):
            stage = self.up[level]
            for i, block in enumerate(stage.block):
                h = block(h)
                if len(stage.attn):
                    h = stage.attn[i](h)
            if level != 0:
                h = stage.upsample(h)
        return self.conv_out(swish(self.norm_out(h)))


class TamingVQ(nn.Module):
    def __init__(self, params):
        super().__init__()
        dd = params["ddconfig"]
        self.encoder, self.decoder = TamingEncoder(dd), TamingDecoder(dd)
        self.quantize = nn.Module()
        self.quantize.embedding = nn.Embedding(params["n_embed"], params["embed_dim"])
        self.quant_conv = nn.Conv2d(dd["z_channels"], params["embed_dim"], 1)
        self.post_quant_conv = nn.Conv2d(params["embed_dim"], dd["z_channels"], 1)
        torch.manual_seed(1)
        for name, p in self.named_parameters():  # non-trivial norms, so a swapped norm shows
            if "norm" in name:
                nn.init.normal_(p, mean=1.0 if name.endswith("weight") else 0.0, std=0.2)

    def quantized(self, z):
        codes = self.quantize.embedding.weight
        flat = z.permute(0, 2, 3, 1).reshape(-1, z.shape[1])
        nearest = torch.cdist(flat, codes).argmin(1)
        return codes[nearest].reshape(z.shape[0], z.shape[2], z.shape[3], -1).permute(0, 3, 1, 2)

    def decode(self, z, quantize=False):
        return self.decoder(self.post_quant_conv(self.quantized(z) if quantize else z))


@pytest.fixture(scope="module")
def converted(tmp_path_factory):
    torch.manual_seed(0)
    ref = TamingVQ(PARAMS).eval()
    folder = tmp_path_factory.mktemp("taming")
    state = dict(ref.state_dict())
    state["loss.discriminator.main.0.weight"] = torch.zeros(2, 3, 4, 4)  # training-only keys
    torch.save({"state_dict": state, "global_step": 7, "epoch": 1}, folder / "last.ckpt")
    (folder / "model.yaml").write_text(yaml.safe_dump(
        {"model": {"target": "taming.models.vqgan.VQModel", "params": PARAMS}}))
    from typer.testing import CliRunner

    from spatialprobe.cli import app

    result = CliRunner().invoke(app, ["convert", "vqgan", str(folder / "last.ckpt"),
                                      str(folder / "model.yaml"), str(folder / "vq")])
    assert result.exit_code == 0, result.output
    assert "16 codes of dim 4" in result.output
    from diffusers import VQModel

    return ref, VQModel.from_pretrained(str(folder / "vq")).eval()


def test_config_follows_ddconfig():
    cfg = vqmodel_config(PARAMS)
    assert cfg["block_out_channels"] == (32, 64)
    assert cfg["down_block_types"] == ("DownEncoderBlock2D", "AttnDownEncoderBlock2D")
    assert cfg["up_block_types"] == ("AttnUpDecoderBlock2D", "UpDecoderBlock2D")
    assert (cfg["latent_channels"], cfg["vq_embed_dim"], cfg["num_vq_embeddings"]) == (8, 4, 16)


def test_key_mapping_examples():
    ref = TamingVQ(PARAMS)
    mapped = convert_state_dict(ref.state_dict(), PARAMS)
    assert mapped["decoder.up_blocks.0.attentions.1.to_out.0.weight"].shape == (64, 64)
    assert torch.equal(mapped["decoder.up_blocks.1.resnets.0.conv_shortcut.weight"],
                       ref.decoder.up[0].block[0].nin_shortcut.weight)
    assert torch.equal(mapped["encoder.mid_block.attentions.0.group_norm.bias"],
                       ref.encoder.mid.attn_1.norm.bias)


def test_decodes_like_the_reference(converted):
    ref, vq = converted
    z = torch.randn(2, 4, 8, 8, generator=torch.Generator().manual_seed(3))
    with torch.no_grad():
        expected = ref.decode(z)
        got = vq.decode(z, force_not_quantize=True).sample
    assert got.shape == (2, 3, 16, 16)
    torch.testing.assert_close(got, expected, atol=1e-5, rtol=1e-4)
    with torch.no_grad():  # through the codebook as well
        torch.testing.assert_close(vq.decode(z).sample, ref.decode(z, quantize=True),
                                   atol=1e-5, rtol=1e-4)


def test_encodes_like_the_reference(converted):
    ref, vq = converted
    x = torch.rand(1, 3, 16, 16, generator=torch.Generator().manual_seed(4)) * 2 - 1
    with torch.no_grad():
        torch.testing.assert_close(vq.encode(x).latents, ref.quant_conv(ref.encoder(x)),
                                   atol=1e-5, rtol=1e-4)


def test_mismatched_checkpoint_and_gumbel_are_refused(tmp_path):
    ref = TamingVQ(PARAMS)
    torch.save({"state_dict": ref.state_dict()}, tmp_path / "last.ckpt")
    other = {**PARAMS, "ddconfig": {**DDCONFIG, "num_res_blocks": 2}}
    (tmp_path / "model.yaml").write_text(yaml.safe_dump({"model": {"params": other}}))
    with pytest.raises(ConversionError, match="does not match"):
        convert_vqgan(tmp_path / "last.ckpt", tmp_path / "model.yaml", tmp_path / "out")
    with pytest.raises(ConversionError, match="Gumbel"):
        convert_state_dict({"quantize.embed.weight": torch.zeros(2, 2)}, PARAMS)
    (tmp_path / "bad.yaml").write_text("model:\n  params:\n    embed_dim: 4\n")
    with pytest.raises(ConversionError, match="n_embed, ddconfig"):
        convert_vqgan(tmp_path / "last.ckpt", tmp_path / "bad.yaml", tmp_path / "out")


def test_lightning_checkpoint_with_classes_this_python_lacks(tmp_path, monkeypatch):
    # taming's last.ckpt keeps Lightning's callback objects beside the state dict; with
    # --allow-pickle it must load without pytorch_lightning installed.
    import sys
    import types

    from typer.testing import CliRunner

    from spatialprobe.cli import app

    fake = types.ModuleType("lightning_absent")

    class ModelCheckpoint:
        def __init__(self):
            self.best = "epoch=3"

    ModelCheckpoint.__module__, ModelCheckpoint.__qualname__ = "lightning_absent", "ModelCheckpoint"
    fake.ModelCheckpoint = ModelCheckpoint
    monkeypatch.setitem(sys.modules, "lightning_absent", fake)
    torch.manual_seed(0)
    ref = TamingVQ(PARAMS).eval()
    torch.save({"state_dict": ref.state_dict(), "callbacks": {ModelCheckpoint: ModelCheckpoint()}},
               tmp_path / "last.ckpt")
    monkeypatch.delitem(sys.modules, "lightning_absent")
    (tmp_path / "model.yaml").write_text(yaml.safe_dump({"model": {"params": PARAMS}}))
    args = ["convert", "vqgan", str(tmp_path / "last.ckpt"), str(tmp_path / "model.yaml"),
            str(tmp_path / "vq")]
    refused = CliRunner().invoke(app, args)
    assert refused.exit_code == 2 and "rerun with --allow-pickle" in refused.output
    done = CliRunner().invoke(app, [*args, "--allow-pickle"])
    assert done.exit_code == 0, done.output
    from diffusers import VQModel

    z = torch.randn(1, 4, 8, 8, generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        got = VQModel.from_pretrained(str(tmp_path / "vq")).decode(z, force_not_quantize=True)
        torch.testing.assert_close(got.sample, ref.decode(z), atol=1e-5, rtol=1e-4)


def test_unreadable_files_get_one_sentence(tmp_path):
    (tmp_path / "junk.ckpt").write_bytes(b"not a checkpoint")
    (tmp_path / "ok.yaml").write_text(yaml.safe_dump({"model": {"params": PARAMS}}))
    with pytest.raises(ConversionError, match=r"junk\.ckpt is not a PyTorch checkpoint"):
        convert_vqgan(tmp_path / "junk.ckpt", tmp_path / "ok.yaml", tmp_path / "out")
    (tmp_path / "bad.yaml").write_text("model: [unclosed\n  params: {")
    with pytest.raises(ConversionError, match=r"bad.yaml: not a readable YAML file \(line 2"):
        convert_vqgan(tmp_path / "junk.ckpt", tmp_path / "bad.yaml", tmp_path / "out")
    (tmp_path / "list.yaml").write_text("- a\n- b\n")
    with pytest.raises(ConversionError, match=r"list\.yaml: expected a mapping"):
        convert_vqgan(tmp_path / "junk.ckpt", tmp_path / "list.yaml", tmp_path / "out")
