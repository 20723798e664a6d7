# frozen_string_literal: true

require "test_helper"
require "open3"

# CONTRIBUTING.md's map of the project names only what the tree has: every file or folder it puts in backticks in
# its tables is a file git tracks (or the folder of one), so the map cannot drift from the tree unnoticed; and every
# file of the stores (lib/lease_machines/store/) is named there.
class ContributingTest < Minitest::Test
  ROOT = File.expand_path("../..", __dir__)
  # What a name in backticks must look like to count as a path: a path with a folder in it ("bin/setup",
  # "sim/"), or a file name with an extension ("run.rs"), which names a file of the row's folder.
  PATH = %r{\A(?:[\w.-]+/[\w./-]*|[\w.-]+\.(?:rs|rb|rbs|toml|sh|md|yml|mjs|sql|lua))\z}
  # The stores' folder: the map names each of its files by its path in it ("redis/commit.lua") or in full.
  STORE = "lib/lease_machines/store/"

  def setup
    checkout_only!("reads this checkout's CONTRIBUTING.md")
    plain_suite_only!("runs git in a child process")
    out, status = Open3.capture2("git", "-C", ROOT, "ls-files")
    skip "not a git checkout" unless status.success?
    @tracked = out.lines(chomp: true)
  end

  def named_paths
    File.readlines(File.join(ROOT, "CONTRIBUTING.md"), chomp: true).grep(/\A\|/).flat_map do |row|
      row.scan(/`([^`\s]+)`/).flatten.grep(PATH)
    end.uniq
  end

  # A path with a folder in it must be a tracked file or folder as written (a folder may also be one level inside a
  # crate: "table/" is core/src/table/; a store's file may be written from STORE: "redis/commit.lua"); a bare file
  # name must be a tracked file's name.
  def tracked?(name)
    folder = name.delete_suffix("/")
    @tracked.any? do |path|
      if name.include?("/")
        path == name || path == "#{STORE}#{name}" || path.start_with?("#{folder}/") ||
          (name.end_with?("/") && !folder.include?("/") && path.include?("/#{folder}/"))
      else
        File.basename(path) == name
      end
    end
  end

  # The files of the stores' folder (its folders included: .rb, .sql, .lua) that +names+ leaves out: a file is named
  # by its path in STORE or in full.
  def unnamed_store_files(names)
    @tracked.grep(%r{\A#{STORE}.+\.(?:rb|sql|lua)\z}).reject do |path|
      names.include?(path) || names.include?(path.delete_prefix(STORE))
    end
  end

  def test_every_path_the_map_names_is_in_the_tree
    names = named_paths
    assert_operator names.size, :>, 40, "the map names the tree's files"
    missing = names.reject { tracked?(_1) }
    assert_empty missing, "CONTRIBUTING.md names paths the tree does not have"
  end

  def test_a_path_the_tree_lacks_is_caught
    refute tracked?("core/src/simulation.rs"), "the simulation left the core"
    refute tracked?("src/run.rs"), "a path is read as written, not as any file's tail"
    assert tracked?("sim/src/run.rs")
    assert tracked?("bin/setup")
    assert tracked?("table/")
  end

  def test_the_map_names_every_file_of_the_stores
    names = named_paths
    assert_operator @tracked.grep(%r{\A#{STORE}}).size, :>, 20, "the stores have their files"
    assert_empty unnamed_store_files(names), "CONTRIBUTING.md's map does not name these files of #{STORE}"
  end

  def test_a_store_file_the_map_leaves_out_is_caught
    names = named_paths
    assert_equal ["#{STORE}redis/commit.lua"], unnamed_store_files(names - ["redis/commit.lua"])
    in_full = names - ["redis/commit.lua"] + ["#{STORE}redis/commit.lua"]
    assert_empty unnamed_store_files(in_full), "a full path names it"
    assert tracked?("redis/commit.lua"), "a store's file is written from its folder"
    refute tracked?("redis/commit.rs")
  end
end
