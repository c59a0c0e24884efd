"""Config parsing (seqlab.base.config, which knows no task) and the task registry (seqlab.tasks.registry): model
configs per task.kind / model.arch, the train.* keys each task uses, presets, and run directories written by
earlier versions (every train key in config.toml)."""

from __future__ import annotations

import dataclasses
import math
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from seqlab import api, tasks
from seqlab.base import config
from seqlab.cli import main
from seqlab.base.config import TrainConfig
from seqlab.base.errors import SeqlabError
from seqlab.tasks import registry

ROOT = Path(__file__).resolve().parents[1]
QUIET = {"log": lambda *a, **k: None}
EMBED_KEYS = ("epochs", "lr", "min_lr", "seed", "threads", "device", "max_minutes", "save_every", "keep_last",
              "batch_size", "report_to", "progress")


@pytest.fixture(scope="module")
def sine_csv(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("sine") / "sine.csv"
    path.write_text("".join(f"{math.sin(2 * math.pi * t / 20)!r}\n" for t in range(120)))
    return path


# --- parsing knows no task ---

def test_parsing_a_config_imports_neither_torch_nor_the_tasks(tmp_path):
    toml = tmp_path / "run.toml"
    toml.write_text('[task]\nkind = "translate"\n[model]\narch = "seq2seq-attention"\nhidden_size = 64\n'
                    "[train]\nlabel_smoothing = 0.1\n")
    code = f"""
import sys
from seqlab.base import config
for name in config.preset_names():
    config.parse(config.apply_overrides(config.load_preset_or_file(name), ["train.progress=false"]))
parsed = config.parse(config.load_preset_or_file({str(toml)!r}))
assert parsed.arch == "seq2seq-attention" and parsed.model == {{"hidden_size": 64}}, parsed
assert parsed.train.label_smoothing == 0.1 and parsed.train_given == ("label_smoothing",), parsed
print(sorted(m for m in sys.modules if m.split(".")[0] in ("torch", "numpy") or m.startswith("seqlab.")))
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert out.returncode == 0, out.stderr
    assert eval(out.stdout) == ["seqlab.base", "seqlab.base.config", "seqlab.base.errors", "seqlab.base.lazy",
                                "seqlab.base.version"]


def test_the_registry_knows_every_task_kind():
    assert set(registry.TASK_MODULES) == set(config.TASK_KINDS)
    for kind in config.TASK_KINDS:
        for arch, cls in registry.task_module(kind).MODEL_CONFIGS.items():
            assert registry.model_config_class(kind, arch) is cls
            keys = registry.train_keys(kind, arch)
            assert "progress" in keys and set(keys) <= {f.name for f in dataclasses.fields(TrainConfig)}, (kind, arch)
    assert registry.train_keys("embed", "sgns") == tuple(k for k in registry.train_keys("lm", "transformer")
                                                          if k in EMBED_KEYS)
    assert set(registry.train_keys("embed", "glove")) == set(EMBED_KEYS) - {"min_lr"}  # AdaGrad: a constant lr
    assert registry.train_keys("forecast", "ar") == ("progress",)
    assert "eval_batches" not in registry.train_keys("forecast", "lstm")
    assert "label_smoothing" not in registry.train_keys("forecast", "transformer")
    every = tuple(f.name for f in dataclasses.fields(TrainConfig))
    assert registry.train_keys("tag", "transformer") == every
    for kind in ("lm", "classify", "translate"):  # singleton_unk: a tagger's words seen once
        assert registry.train_keys(kind, "transformer") == tuple(k for k in every if k != "singleton_unk")


def test_trainer_keys_are_what_the_trainer_reads():
    from seqlab.training import optim, trainer

    source = "".join(Path(m.__file__).read_text(encoding="utf-8") for m in (trainer, optim))
    read = set(re.findall(r"\bcfg\.(\w+)", source))
    derived = {name for name, value in vars(TrainConfig).items() if isinstance(value, property)}  # not keys
    assert read - derived == set(trainer.TRAINER_KEYS)


def test_unknown_kind_arch_and_keys_are_refused_as_before():
    with pytest.raises(SeqlabError, match="task.kind must be one of lm, tag, classify, translate, forecast, embed"):
        tasks.from_dict({"task": {"kind": "parse"}})
    with pytest.raises(SeqlabError, match="model.arch='gpt' is not available for task.kind=lm; available: "
                                          "transformer, lstm, gru, rnn"):
        tasks.from_dict({"model": {"arch": "gpt"}})
    with pytest.raises(SeqlabError, match="model.arch='ar' is not available for task.kind=tag"):
        tasks.resolve("ner-bilstm", ["model.arch=ar"])
    with pytest.raises(SeqlabError, match="model.arch must be a string"):
        tasks.from_dict({"model": {"arch": 3}})
    with pytest.raises(SeqlabError, match=r"unknown config section\(s\) \['optim'\]"):
        tasks.from_dict({"optim": {}})
    with pytest.raises(SeqlabError, match="model.vocab_size is derived from the data and cannot be set; "
                                          "valid model keys: arch, n_layers"):
        tasks.resolve("lm-char", ["model.vocab_size=100"])
    with pytest.raises(SeqlabError, match="model.n_labels is derived from the data"):
        tasks.resolve("ner-minilm", ["model.n_labels=9"])
    with pytest.raises(SeqlabError, match="unknown key train.warmup; valid train keys: max_steps, epochs"):
        tasks.resolve("lm-char", ["train.warmup=3"])


def test_unused_train_keys_are_refused_naming_the_keys_the_task_uses():
    with pytest.raises(SeqlabError) as e:
        tasks.resolve("w2v-sgns", ["train.warmup_steps=10"])
    assert str(e.value) == ('train.warmup_steps is not used by task.kind = "embed" with model.arch = "sgns"; its '
                            "train keys are: epochs, max_minutes, batch_size, lr, min_lr, seed, device, threads, "
                            "save_every, keep_last, report_to, progress; remove it")
    with pytest.raises(SeqlabError, match='^train.min_lr is not used by task.kind = "embed" with model.arch = "glove"'):
        tasks.resolve("glove", ["train.min_lr=0.001"])  # AdaGrad at a constant rate
    with pytest.raises(SeqlabError, match=r'^train.max_steps, train.eval_every are not used by task.kind = "embed"'
                                          r".*; remove them$"):
        tasks.resolve("glove", ["train.max_steps=5", "train.eval_every=2"])
    # label smoothing: a case of the rule (only the cross-entropy tasks use it)
    with pytest.raises(SeqlabError, match='^train.label_smoothing is not used by task.kind = "forecast" with '
                                          'model.arch = "ar"; its train keys are: progress; remove it$'):
        tasks.resolve("ar", ["train.label_smoothing=0.1"])
    with pytest.raises(SeqlabError, match='train.eval_batches is not used by task.kind = "forecast" with '
                                          'model.arch = "lstm"'):
        tasks.resolve("forecast-lstm", ["train.eval_batches=3"])
    assert tasks.resolve("ar", ["train.progress=false"]).train.progress is False  # progress: every task
    assert tasks.resolve("mt-transformer", ["train.label_smoothing=0.2"]).train.label_smoothing == 0.2


def test_unused_train_keys_are_refused_before_a_run_directory_exists(tmp_path, monkeypatch, capsys):
    run = tmp_path / "runs" / "w2v"
    with pytest.raises(SeqlabError, match='train.warmup_steps is not used by task.kind = "embed"'):  # --set
        api.train_run("w2v-sgns", run, overrides=["train.warmup_steps=10"], **QUIET)
    assert not run.exists()
    toml = tmp_path / "embed.toml"  # a TOML file
    toml.write_text('[task]\nkind = "embed"\n[data]\ntokenizer = "word"\n[model]\narch = "glove"\n'
                    "[train]\nepochs = 2\ngrad_clip = 1.0\n")
    with pytest.raises(SeqlabError, match='train.grad_clip is not used by task.kind = "embed"'):
        api.train_run(str(toml), run, **QUIET)
    assert not run.exists()
    preset = config.load_preset_or_file  # a preset: w2v-sgns as it was, with max_steps = 1000000

    def old_presets(name):
        raw = preset(name)
        return {**raw, "train": {**raw["train"], "max_steps": 1_000_000}} if name == "w2v-sgns" else raw

    monkeypatch.setattr(config, "load_preset_or_file", old_presets)
    with pytest.raises(SeqlabError, match='train.max_steps is not used by task.kind = "embed"'):
        api.train_run("w2v-sgns", run, **QUIET)
    assert not run.exists()
    assert main(["train", "ar", "--set", "train.seed=3", "--out", str(run)]) == 2  # the command line
    err = capsys.readouterr().err
    assert err.startswith('error: train.seed is not used by task.kind = "forecast" with model.arch = "ar"')
    assert len(err.strip().splitlines()) == 1 and not run.exists()


def test_every_preset_resolves_and_round_trips():
    for name in config.preset_names():
        cfg = tasks.resolve(name)
        assert isinstance(cfg.model, registry.model_config_class(cfg.task.kind, cfg.arch)), name
        used = registry.train_keys(cfg.task.kind, cfg.arch)
        raw = config.load_preset_or_file(name)
        assert set(raw.get("train", {})) <= set(used), name  # presets carry only keys their task uses
        doc = cfg.to_dict()
        assert tuple(doc["train"]) == used and not registry.DERIVED_MODEL_KEYS & set(doc["model"]), name
        assert tasks.from_dict(tomllib.loads(cfg.to_toml())) == cfg, name


def test_the_run_config_model_has_no_placeholder_sizes():
    from seqlab.models.transformer import TransformerLM

    cfg = tasks.resolve("lm-char")
    assert cfg.model.vocab_size is None and cfg.model.d_model == 128
    assert TransformerLM(dataclasses.replace(cfg.model, vocab_size=50)).head.out_features == 50
    with pytest.raises(SeqlabError, match="vocab_size=None must be a positive whole number"):
        TransformerLM(cfg.model)
    with pytest.raises(SeqlabError, match="d_model"):  # the model's own checks still run when parsing
        tasks.resolve("lm-char", ["model.d_model=30", "model.n_heads=4"])
    translate = tasks.resolve("mt-transformer", ["model.share_embeddings=true"]).model
    with pytest.raises(SeqlabError, match="share_embeddings needs src_vocab_size == tgt_vocab_size"):
        dataclasses.replace(translate, src_vocab_size=10, tgt_vocab_size=12)


# --- run directories ---

def test_config_toml_records_only_the_train_keys_the_task_uses(sine_csv, tmp_path):
    run = api.train_run("ar", tmp_path / "ar", overrides=[f"data.source={sine_csv}", "model.max_p=4",
                                                      "train.progress=false"], **QUIET)
    doc = tomllib.loads((run / "config.toml").read_text(encoding="utf-8"))
    assert doc["train"] == {"progress": False} and doc["model"]["arch"] == "ar"
    assert tasks.resolve("w2v-hs").to_dict()["train"].keys() == set(EMBED_KEYS)
    # a RunConfig built by hand records the same keys (and never the sizes read from the data)
    from seqlab.base.config import DataConfig, RunConfig, TaskConfig
    from seqlab.models.autoregressive import ARConfig

    by_hand = RunConfig(task=TaskConfig("forecast"), data=DataConfig(source=str(sine_csv)), model=ARConfig(max_p=4),
                        arch="ar", train=TrainConfig(progress=False))
    run = api.train_run(by_hand, tmp_path / "by_hand", **QUIET)
    assert tomllib.loads((run / "config.toml").read_text(encoding="utf-8"))["train"] == {"progress": False}
    assert api.load(run).config == tasks.resolve("ar", [f"data.source={sine_csv}", "model.max_p=4",
                                                        "train.progress=false"])


def _as_written_by_the_previous_version(run: Path) -> dict:
    """Rewrite run/config.toml with every TrainConfig key, as seqlab wrote it before unused keys were refused."""
    doc = tomllib.loads((run / "config.toml").read_text(encoding="utf-8"))
    doc["train"] = {**dataclasses.asdict(TrainConfig()), **doc["train"]}
    (run / "config.toml").write_text(config.dumps_toml(doc), encoding="utf-8")
    return doc


def test_a_run_with_every_train_key_in_config_toml_loads_and_resumes(sine_csv, tmp_path):
    overrides = [f"data.source={sine_csv}", "model.max_len=8", "model.hidden_size=8", "train.eval_every=0",
                 "train.save_every=0", "train.progress=false", "train.threads=1", "train.batch_size=8"]
    run = api.train_run("forecast-lstm", tmp_path / "lstm", overrides=[*overrides, "train.max_steps=4"], **QUIET)
    old = _as_written_by_the_previous_version(run)
    assert old["train"]["eval_batches"] == 20 and old["train"]["label_smoothing"] == 0.0  # unused here
    forecaster = api.load(run, device="cpu")
    assert forecaster.config.train.max_steps == 4 and len(forecaster.predict(steps=3)) == 3
    # --resume: the unused keys recorded by the old version are no difference
    assert main(["train", "forecast-lstm", *[a for o in overrides for a in ("--set", o)], "--set",
                 "train.max_steps=6", "--out", str(run), "--resume"]) == 0
    assert api.load(run, device="cpu").model is not None
    state = tomllib.loads((run / "config.toml").read_text(encoding="utf-8"))
    assert "eval_batches" not in state["train"] and state["train"]["max_steps"] == 6
    from seqlab.training import checkpoint

    assert checkpoint.load_state(run)["step"] == 6
    # a key the task uses still may not change on resume
    with pytest.raises(SeqlabError, match="cannot resume .*train.lr differ"):
        api.train_run("forecast-lstm", run, overrides=[*overrides, "train.max_steps=6", "train.lr=0.1"], resume=True,
                  **QUIET)
    # the old ar run: load and resume (nothing to do: AR is fitted in closed form)
    ar = api.train_run("ar", tmp_path / "ar", overrides=[f"data.source={sine_csv}", "model.max_p=4"], **QUIET)
    _as_written_by_the_previous_version(ar)
    assert api.load(ar).model.p >= 1
    api.train_run("ar", ar, overrides=[f"data.source={sine_csv}", "model.max_p=4"], resume=True, **QUIET)


def test_reading_a_run_config_drops_unused_keys_but_a_user_config_refuses_them():
    doc = tasks.resolve("w2v-sgns").to_dict()
    doc["train"] = {**dataclasses.asdict(TrainConfig(max_steps=1_000_000, warmup_steps=7)), **doc["train"]}
    with pytest.raises(SeqlabError, match="are not used by"):
        tasks.from_dict(doc)
    cfg = tasks.from_dict(doc, drop_unused=True)
    assert cfg == tasks.resolve("w2v-sgns") and cfg.train.max_steps == TrainConfig().max_steps


# --- model keys the run would not use; sections (the Python API's dict of sections) ---

def test_ar_p_under_order_selection_is_refused_on_the_command_line(tmp_path, capsys):
    with pytest.raises(SeqlabError, match=r"^model\.p is not used while model\.max_p = 30 chooses p by model\.ic; "
                                          r"also set model\.max_p=0 to fit AR\(9\)$"):
        registry.resolve("ar", ["model.p=9"])
    assert registry.resolve("ar", ["model.p=9", "model.max_p=0"]).model.p == 9
    assert registry.resolve("ar").model.max_p == 30  # the preset's own p = 2 beside max_p = 30 is its choice
    assert main(["train", "ar", "--set", "model.p=9", "--out", str(tmp_path / "ar")]) == 2  # the CLI path
    assert "model.p is not used while model.max_p = 30" in capsys.readouterr().err
    assert not (tmp_path / "ar").exists()


@pytest.mark.parametrize("preset, model, match", [
    ("ar", {"p": 9}, r"model\.p is not used while model\.max_p = 30 .*set model\.max_p=0 to fit AR\(9\)"),
    ("ar", {"max_p": 0, "ic": "bic"}, r"model\.ic is not used while model\.max_p = 0 keeps model\.p = 2"),
    ("w2v-hs", {"ns_exponent": 0.5}, r"model\.ns_exponent is not used while model\.negative = 0"),
    ("forecast-lstm", {"dropout": 0.2}, r"model\.dropout is not used while model\.n_layers = 1"),
    ("lm-lstm", {"nonlinearity": "tanh"}, r"model\.nonlinearity is not used while model\.cell = 'lstm'"),
    ("ner-bilstm", {"nonlinearity": "tanh"}, r"model\.nonlinearity is not used while model\.cell = 'lstm'"),
    ("ner-minilm", {"n_layers": 2}, r"model\.n_layers comes from the pretrained checkpoint .*\(valid model keys: "
                                    r"arch, pretrained, dropout, max_len"),
])
def test_a_model_key_the_user_sets_but_the_run_would_not_use_is_refused(preset, model, match):
    for resolve in (lambda: registry.resolve(preset, sections={"model": model}),
                    lambda: registry.resolve(preset, [f"model.{k}={v!r}".replace("'", '"') for k, v in model.items()])):
        with pytest.raises(SeqlabError, match=match) as err:
            resolve()
        assert "\n" not in str(err.value)


@pytest.mark.parametrize("preset, model", [
    ("ar", {"max_p": 5, "ic": "bic"}), ("ar", {"max_p": 0}), ("w2v-hs", {"negative": 3, "ns_exponent": 0.5}),
    ("w2v-sgns", {"ns_exponent": 0.5}), ("forecast-lstm", {"n_layers": 2, "dropout": 0.2}),
    ("lm-lstm", {"arch": "rnn", "cell": "rnn", "nonlinearity": "relu"}),
])
def test_the_same_keys_are_used_once_the_deciding_key_allows_them(preset, model):
    cfg = registry.resolve(preset, sections={"model": model})
    assert all(getattr(cfg.model, k) == v for k, v in model.items() if k != "arch")


def test_sections_apply_then_overrides_checked_as_set():
    cfg = registry.resolve("lm-char", ["train.max_steps=9"],
                           sections={"model": {"n_layers": 3}, "train": {"max_steps": 7, "lr": 0.01}})
    assert (cfg.model.n_layers, cfg.train.max_steps, cfg.train.lr) == (3, 9, 0.01)
    assert cfg == registry.resolve("lm-char", ["model.n_layers=3", "train.lr=0.01", "train.max_steps=9"])
    assert registry.resolve("lm-char", sections={}) == tasks.resolve("lm-char")
    cases = [({"optim": {"lr": 1}}, r"^unknown config section 'optim'; valid sections: task, data, model, train$"),
             ({"model": 4}, r"^section model must be a dict of keys"),
             ({"train": {1: 2}}, r"^section train: key 1 is not a str"),
             ([("model", {})], r"^sections must be a dict of sections"),
             ({"model": {"n_layer": 4}}, r"^unknown key model\.n_layer; valid model keys: arch, n_layers, n_heads"),
             ({"train": {"max_steps": "ten"}}, r"^train\.max_steps must be an integer, got 'ten'"),
             ({"train": {"warmup_steps": 10}}, r'^train\.warmup_steps is not used by task\.kind = "embed"')]
    for sections, match in cases:
        with pytest.raises(SeqlabError, match=match):
            registry.resolve("w2v-sgns" if "warmup_steps" in str(sections) else "lm-char", sections=sections)


def test_sections_on_a_run_config_apply_the_overrides_too():
    for name in config.preset_names():  # a RunConfig's own dict is the base: nothing changes without sections
        cfg = tasks.resolve(name)
        assert registry.resolve(cfg) == cfg, name
    ar = tasks.resolve("ar")
    assert registry.resolve(ar, ["model.max_p=0", "model.p=4"]).model.p == 4  # not dropped
    assert registry.resolve(ar, sections={"model": {"max_p": 3}}).model.max_p == 3
    by_hand = config.RunConfig(task=config.TaskConfig("forecast"), model=registry.model_config_class(
        "forecast", "ar")(max_p=4), arch="ar")  # every TrainConfig key: the pass keeps those the task uses
    assert registry.resolve(by_hand, sections={"train": {"progress": False}}).train.progress is False
    with pytest.raises(SeqlabError, match=r"model\.p is not used while model\.max_p = 4"):
        registry.resolve(by_hand, ["model.p=3"])
    with pytest.raises(SeqlabError, match=r'train\.lr is not used by task\.kind = "forecast"'):
        registry.resolve(ar, sections={"train": {"lr": 0.1}})


def test_parsed_config_records_the_keys_the_user_set():
    raw = config.load_preset_or_file("ar")
    sections = config.parse_overrides(["model.p=3", "train.progress=false", "model.p=4"])
    assert sections == {"model": {"p": 4}, "train": {"progress": False}}
    assert config.given_keys(sections) == {"model.p", "train.progress"}
    parsed = config.parse(config.merge_sections(raw, sections), given=config.given_keys(sections))
    assert parsed.given == {"model.p", "train.progress"} and parsed.model["max_p"] == 30
    assert config.parse(raw).given == frozenset()


def test_a_whole_number_too_large_for_a_float_is_checked_without_overflow():
    assert registry.resolve("lm-char", ["train.max_steps=" + "9" * 400]).train.max_steps == int("9" * 400)
    with pytest.raises(SeqlabError, match=r"train\.warmup_steps must be >= 0, got -9999"):
        registry.resolve("lm-char", ["train.warmup_steps=-" + "9" * 400])
