# frozen_string_literal: true

# Long fault soaks, outside the suite (which runs them for about 20 s).
namespace :soak do
  desc "Soak the PostgreSQL store under faults for LEASE_MACHINES_SOAK_SECONDS (default 60): SIGKILLed workers, " \
       "server crashes, a host cut off; the checker's summary at the end (histories kept in tmp/ on a violation)"
  task postgres: :compile do
    env = { "LEASE_MACHINES_SOAK_SECONDS" => ENV.fetch("LEASE_MACHINES_SOAK_SECONDS", "60") }
    sh env, FileUtils::RUBY, "-Ilib", "-Itest", "test/store/postgresql_faults_test.rb", "-n", "/never_break/"
  end
end
