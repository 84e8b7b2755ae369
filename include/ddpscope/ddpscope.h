#pragma once
// ddpscope's public API in one include: a LightningModule and a LightningDataModule of your
// own, driven by the Trainer, alone or as one rank of a DDP job (examples/seed.cpp).
// Everything under include/ddpscope/ is public and installed; src/ is private.
#include "ddpscope/dataset.h"
#include "ddpscope/error.h"
#include "ddpscope/module.h"
#include "ddpscope/random.h"
#include "ddpscope/trainer.h"
#include "ddpscope/world_join.h"
