//! One simulation in progress: the [`Run`] that plays the configured scenario on its [`Stage`] cycle by cycle.

use crate::contention::Crowd;
use crate::failover::Incumbents;
use crate::stage::Stage;
use crate::{Scenario, SimulationConfig, SimulationError, SimulationReport};

/// The workers of the configured scenario.
enum Scene {
    Contention(Crowd),
    Failover(Incumbents),
}

/// One simulation in progress.
pub(crate) struct Run {
    stage: Stage,
    scene: Scene,
}

impl Run {
    pub(crate) fn new(config: SimulationConfig) -> Result<Self, SimulationError> {
        let resources = usize::try_from(config.resources).map_err(|_| SimulationError::Resources(config.resources))?;
        let workers = usize::try_from(config.workers).map_err(|_| SimulationError::Workers(config.workers))?;
        let stage = Stage::new(config, resources, workers)?;
        let scene = match config.scenario {
            Scenario::Contention => Scene::Contention(Crowd::new(config.workers)),
            Scenario::Failover => Scene::Failover(Incumbents::new(resources)),
        };
        Ok(Self { stage, scene })
    }

    pub(crate) const fn config(&self) -> &SimulationConfig {
        &self.stage.config
    }

    pub(crate) const fn cycles_run(&self) -> u64 {
        self.stage.report.cycles
    }

    /// Runs one cycle of the configured scenario.
    pub(crate) fn cycle(&mut self) {
        match &mut self.scene {
            Scene::Contention(crowd) => crowd.cycle(&mut self.stage),
            Scene::Failover(incumbents) => incumbents.cycle(&mut self.stage),
        }
        self.stage.end_cycle();
    }

    pub(crate) fn finish(self) -> SimulationReport {
        self.stage.finish()
    }
}
