//! The service put together once: its state, the route table and, when
//! asked, the background jobs, on a bound listener, served until a shutdown
//! and then drained. `vitrina serve` runs it, and so do the integration
//! tests, so that they test what production runs.

use std::future::Future;
use std::net::SocketAddr;
use std::time::Duration;

use sea_orm::DatabaseConnection;
use tokio::net::TcpListener;

use crate::clock::SharedClock;
use crate::config::Settings;
use crate::error::Error;
use crate::jobs::scheduler::Jobs;
use crate::server;
use crate::state::AppState;

/// The service on its listener, ready to run.
pub struct App {
    state: AppState,
    listener: TcpListener,
    /// Whether the background jobs run beside the server.
    jobs: bool,
}

impl App {
    /// The service over `db` on `listener`, reached by clients at
    /// `public_url`; `demo_key`, under `serve --demo`, is filled into the
    /// browser pages. Fails when the settings do not fit together.
    pub fn build(
        db: DatabaseConnection,
        clock: SharedClock,
        settings: Settings,
        listener: TcpListener,
        public_url: String,
        demo_key: Option<String>,
    ) -> Result<App, Error> {
        let mut state = AppState::new(db, clock, public_url, settings)?;
        if let Some(key) = demo_key {
            state = state.with_demo_key(key);
        }
        Ok(App {
            state,
            listener,
            jobs: false,
        })
    }

    /// Runs the background jobs beside the server, on the state's clock.
    pub fn with_jobs(self) -> App {
        App { jobs: true, ..self }
    }

    /// The state the server answers with.
    pub fn state(&self) -> &AppState {
        &self.state
    }

    pub fn local_addr(&self) -> std::io::Result<SocketAddr> {
        self.listener.local_addr()
    }

    /// Serves until `shutdown` resolves, then drains: the server finishes
    /// what is in flight, and the jobs their current work, both within the
    /// shutdown grace period.
    pub async fn run(
        self,
        shutdown: impl Future<Output = ()> + Send + 'static,
    ) -> std::io::Result<()> {
        let App {
            state,
            listener,
            jobs,
        } = self;
        if !jobs {
            return server::serve(listener, state, shutdown).await;
        }
        let every = Duration::from_secs(state.settings.jobs.merge_interval_secs.max(1));
        let jobs = tokio::spawn(jobs_of(&state).run(every, state.draining.watch()));
        // The jobs stop when the server starts draining, within the same grace.
        let grace = Duration::from_secs(state.settings.http.shutdown_grace_secs);
        let draining = state.draining.clone();
        let jobs_stopped = async {
            draining.started().await;
            if tokio::time::timeout(grace, jobs).await.is_err() {
                tracing::warn!(
                    "the jobs did not stop within the shutdown grace period; \
                     the submissions they claimed return to pending when their lease runs out"
                );
            }
            Ok::<(), std::io::Error>(())
        };
        tokio::try_join!(server::serve(listener, state, shutdown), jobs_stopped)?;
        Ok(())
    }
}

/// The background jobs over what `state` holds: its database, clock,
/// settings, webhook sender and live events.
pub fn jobs_of(state: &AppState) -> Jobs {
    Jobs::new(
        state.db.clone(),
        state.clock.clone(),
        &state.settings,
        &state.public_url,
        state.webhook_sender.clone(),
        state.events.clone(),
    )
}
