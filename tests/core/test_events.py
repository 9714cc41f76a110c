"""Events and instructions are plain immutable values that a journal can record and replay.

Specified here, for every input (Result, TrialFailed, WorkersChanged, TrialHalted,
DeadlineChanged) and every instruction (Start, Continue, Resize, Pause, Stop, and any added
later): no field can be changed and no attribute added; equal fields mean equal values;
``match(**fields)`` is true exactly when every given field equals; ``as_dict()`` names the
type and every field; each instruction about a trial carries its ``trial_id``.
"""

from __future__ import annotations

import dataclasses
import typing

import pytest

from hypersched_nb.core import events
from hypersched_nb.core.events import (
    DeadlineChanged,
    Pause,
    Result,
    Start,
    TrialFailed,
    WorkersChanged,
)

SAMPLES = {
    "Result": {
        "trial_id": 3,
        "epoch": 2,
        "metric": 0.71,
        "time": 12.0,
        "seconds": 4.0,
        "workers": 2,
        "startup": 1.5,
        "done": False,
    },
    "TrialFailed": {
        "trial_id": 3,
        "time": 12.0,
        "error": "Traceback ...\nValueError: boom",
        "epoch": 2,
    },
    "WorkersChanged": {"time": 12.0, "workers": 6, "lost": (3, 4)},
    "TrialHalted": {"trial_id": 3, "time": 12.0, "reason": "paused: its worker was restarted"},
    "DeadlineChanged": {"time": 12.0, "deadline": 1800.0},
    "Start": {"trial_id": 3, "config": {"lr": 0.1}, "workers": 1, "restore": True},
    "Continue": {"trial_id": 3},
    "Resize": {"trial_id": 3, "workers": 4},
    "Pause": {"trial_id": 3},
    "Stop": {"trial_id": 3},
    "ScaleCluster": {"workers": 8},
}


def members(union) -> list[type]:
    return list(typing.get_args(union))


def field_names(cls: type) -> list[str]:
    if dataclasses.is_dataclass(cls):
        return [f.name for f in dataclasses.fields(cls)]
    return list(cls._fields)  # a NamedTuple


ALL = members(events.Event) + members(events.Instruction)


def sample(cls: type):
    return cls(**SAMPLES[cls.__name__])


def test_every_event_and_instruction_has_a_sample_here():
    # an event type added to the unions must be specified here too
    assert {cls.__name__ for cls in ALL} <= set(SAMPLES)
    # the unions hold the inputs and the instructions of the runtime protocol (docs/design.md)
    assert {c.__name__ for c in members(events.Event)} >= {
        "Result",
        "TrialFailed",
        "WorkersChanged",
        "DeadlineChanged",
    }
    assert {c.__name__ for c in members(events.Instruction)} >= {
        "Start",
        "Continue",
        "Resize",
        "Pause",
        "Stop",
    }


@pytest.mark.parametrize("cls", ALL, ids=lambda c: c.__name__)
def test_fields_cannot_change(cls):
    value = sample(cls)
    for name in field_names(cls):
        with pytest.raises(AttributeError):
            setattr(value, name, None)
    # and no attribute can be added (a frozen slots dataclass says so with a TypeError)
    with pytest.raises((AttributeError, TypeError)):
        value.note = "x"
    assert not hasattr(value, "note")


@pytest.mark.parametrize("cls", ALL, ids=lambda c: c.__name__)
def test_equal_fields_mean_equal_values(cls):
    assert sample(cls) == sample(cls)
    changed = dict(SAMPLES[cls.__name__], **{field_names(cls)[0]: 99})
    assert cls(**changed) != sample(cls)


@pytest.mark.parametrize("cls", ALL, ids=lambda c: c.__name__)
def test_match_is_true_exactly_when_every_given_field_equals(cls):
    value, fields = sample(cls), SAMPLES[cls.__name__]
    # all fields, each field alone, and no field at all match
    assert value.match(**fields)
    assert all(value.match(**{k: v}) for k, v in fields.items())
    assert value.match()
    # one different field is enough to fail
    first = field_names(cls)[0]
    assert not value.match(**{first: 99})
    assert not value.match(**dict(fields, **{first: 99}))


def test_match_reads_like_a_test_expectation():
    result = Result(3, 2, 0.71, 12.0, 4.0, 2)
    assert result.match(trial_id=3, epoch=2)
    # defaults are fields too: no start-up, not done, no extra metrics
    assert result.match(startup=0.0, done=False, info=None)
    assert not result.match(trial_id=3, epoch=3)
    # a field the value does not have is an error, not a silent False
    with pytest.raises(AttributeError):
        result.match(epochs=2)


@pytest.mark.parametrize("cls", ALL, ids=lambda c: c.__name__)
def test_as_dict_names_the_type_and_every_field(cls):
    value = sample(cls)
    as_dict = value.as_dict()
    assert as_dict["type"] == cls.__name__
    # every field, defaults included, and nothing else
    assert set(as_dict) == {"type", *field_names(cls)}
    assert as_dict.items() >= SAMPLES[cls.__name__].items()


@pytest.mark.parametrize("cls", members(events.Instruction), ids=lambda c: c.__name__)
def test_instructions_about_a_trial_carry_its_id(cls):
    # only cluster-wide instructions have no trial
    assert ("trial_id" in field_names(cls)) == ("trial_id" in SAMPLES[cls.__name__])


def test_inputs_carry_their_time():
    for cls in (Result, TrialFailed, WorkersChanged, DeadlineChanged):
        # the journal orders inputs by when they happened
        assert "time" in field_names(cls)


def test_start_defaults_to_a_fresh_start_and_pause_is_just_an_id():
    assert Start(1, {}, 1).restore is False
    assert Pause(1).as_dict() == {"type": "Pause", "trial_id": 1}
