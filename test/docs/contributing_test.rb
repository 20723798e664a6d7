# frozen_string_literal: true

require "test_helper"
require "open3"

# CONTRIBUTING.md's map of the project names only what the tree has: every file or folder it puts in backticks in
# its tables is a file git tracks (or the folder of one), so the map cannot drift from the tree unnoticed.
class ContributingTest < Minitest::Test
  ROOT = File.expand_path("../..", __dir__)
  # What a name in backticks must look like to count as a path: a path with a folder in it ("bin/setup",
  # "sim/"), or a file name with an extension ("run.rs"), which names a file of the row's folder.
  PATH = %r{\A(?:[\w.-]+/[\w./-]*|[\w.-]+\.(?:rs|rb|rbs|toml|sh|md|yml|mjs))\z}

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
  # crate: "table/" is core/src/table/); a bare file name must be a tracked file's name.
  def tracked?(name)
    folder = name.delete_suffix("/")
    @tracked.any? do |path|
      if name.include?("/")
        path == name || path.start_with?("#{folder}/") || (name.end_with?("/") && !folder.include?("/") && path.include?("/#{folder}/"))
      else
        File.basename(path) == name
      end
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
end
